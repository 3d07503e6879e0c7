#include "models/classifier_labels.h"

#include <charconv>

#include "core/error.h"
#include "io/json_util.h"

namespace il::models {

namespace d = io::detail;
using nlohmann::json;

namespace {

// Upper bound for counts read from config.json (as the architectures' parsers bound sizes).
constexpr long long kMaxLabels = 1LL << 24;

std::map<int, std::string> read_id2label(const json& j, const std::string& src) {
  std::map<int, std::string> out;
  const auto it = j.find("id2label");
  if (it == j.end() || it->is_null()) return out;
  check(it->is_object(), src, ": field \"id2label\" must be an object, got ", d::describe(*it));
  for (const auto& [key, value] : it->items()) {
    long long index = -1;
    const auto r = std::from_chars(key.data(), key.data() + key.size(), index);
    const bool decimal = !key.empty() && key.front() != '-' && r.ec == std::errc() && r.ptr == key.data() + key.size();
    check(decimal && index < kMaxLabels, src, ": field \"id2label\" key ", d::describe(json(key)),
          " is not a label index (a non-negative integer)");
    check(value.is_string(), src, ": field \"id2label\" name of label ", index, " must be a string, got ",
          d::describe(value));
    check(out.emplace(static_cast<int>(index), value.get<std::string>()).second, src,
          ": field \"id2label\" names label ", index, " twice");
  }
  return out;
}

}  // namespace

int read_num_labels(const json& j, const std::string& src) {
  if (const auto n = d::opt_int(j, "num_labels", src)) {
    check(*n >= 1 && *n <= kMaxLabels, src, ": field \"num_labels\" = ", *n, " must be at least 1");
    return static_cast<int>(*n);
  }
  const auto it = j.find("id2label");
  if (it != j.end() && !it->is_null()) {
    check(it->is_object(), src, ": field \"id2label\" must be an object, got ", d::describe(*it));
    check(!it->empty(), src, ": field \"id2label\" is empty");
    return static_cast<int>(it->size());
  }
  return 1;
}

ClassifierLabels read_classifier_labels(const json& j, const std::string& src) {
  ClassifierLabels l;
  l.num_labels = read_num_labels(j, src);
  l.id2label = read_id2label(j, src);
  if (!l.id2label.empty())
    check(l.id2label.rbegin()->first < l.num_labels, src, ": field \"id2label\" names label ",
          l.id2label.rbegin()->first, " but the model has ", l.num_labels,
          " label(s) (num_labels, else the number of id2label entries)");
  return l;
}

std::vector<std::string> label_names(const ClassifierLabels& labels) {
  std::vector<std::string> out;
  for (int i = 0; i < labels.num_labels; ++i) {
    const auto it = labels.id2label.find(i);
    out.push_back(it != labels.id2label.end() ? it->second : "LABEL_" + std::to_string(i));
  }
  return out;
}

}  // namespace il::models
