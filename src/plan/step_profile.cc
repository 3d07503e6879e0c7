#include "plan/step_profile.h"

#include <algorithm>
#include <type_traits>
#include <sstream>
#include <utility>
#include <vector>

namespace il::plan {

const char* op_name(const StepOp& op) {
  return std::visit(
      [](const auto& o) -> const char* {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, EmbedStep>) return "embed";
        if constexpr (std::is_same_v<T, GemmStep>) return "gemm";
        if constexpr (std::is_same_v<T, LayerNormStep>) return "layernorm";
        if constexpr (std::is_same_v<T, AttentionStep>) return "attention";
        if constexpr (std::is_same_v<T, PoolStep>) return "pool";
        if constexpr (std::is_same_v<T, L2Step>) return "l2";
      },
      op);
}

void StepProfile::add(const std::string& step, const char* op, double ms) {
  Entry& e = steps_[step];
  e.op = op;
  e.ms += ms;
  e.calls += 1;
}

std::string StepProfile::report(const std::string& title, std::size_t slowest) const {
  std::map<std::string, double> by_op;
  double total = 0.0;
  for (const auto& [name, e] : steps_) {
    by_op[e.op] += e.ms;
    total += e.ms;
  }
  std::ostringstream os;
  os << title << ": " << total << " ms in all steps\n";
  for (const auto& [op, ms] : by_op)
    os << "  " << op << ": " << ms << " ms (" << (total > 0 ? 100.0 * ms / total : 0.0) << "%)\n";
  std::vector<std::pair<double, std::string>> order;
  for (const auto& [name, e] : steps_) order.emplace_back(e.ms, name);
  std::sort(order.rbegin(), order.rend());
  for (std::size_t i = 0; i < std::min(slowest, order.size()); ++i) {
    const Entry& e = steps_.at(order[i].second);
    os << "    " << order[i].second << ": " << e.ms << " ms, " << e.ms / static_cast<double>(e.calls)
       << " ms per call\n";
  }
  return os.str();
}

}  // namespace il::plan
