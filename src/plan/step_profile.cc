#include "plan/step_profile.h"

#include <algorithm>
#include <type_traits>
#include <sstream>
#include <utility>
#include <vector>

#include "plan/overloaded.h"

namespace il::plan {

const char* op_name(const StepOp& op) {
  return std::visit(Overloaded{
                        [](const EmbedStep&) { return "embed"; },
                        [](const GemmStep&) { return "gemm"; },
                        [](const LayerNormStep&) { return "layernorm"; },
                        [](const GluStep&) { return "glu"; },
                        [](const RopeStep&) { return "rope"; },
                        [](const AttentionStep&) { return "attention"; },
                        [](const PoolStep&) { return "pool"; },
                        [](const L2Step&) { return "l2"; },
                        [](const DisentangledAttentionStep&) { return "disentangled_attention"; },
                        [](const ShortConvStep&) { return "short_conv"; },
                        [](const PatchEmbedStep&) { return "patch_embed"; },
                        [](const ProbeAttentionStep&) { return "probe_attention"; },
                        [](const KvWriteStep&) { return "kv_write"; },
                        [](const CachedAttentionStep&) { return "cached_attention"; },
                        [](const InjectRowsStep&) { return "inject_rows"; },
                        [](const RouterStep&) { return "router"; },
                        [](const MoeStep&) { return "moe"; },
                        [](const SoftmaxStep&) { return "softmax"; },
                        [](const SoftcapStep&) { return "softcap"; },
                        [](const SamAttentionStep&) { return "sam_attention"; },
                        [](const GatherRowsStep&) { return "gather_rows"; },
                        [](const SequenceWindowStep&) { return "sequence_window"; },
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
