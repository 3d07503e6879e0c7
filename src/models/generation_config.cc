#include "models/generation_config.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_util.h"

namespace il::models {
namespace {

namespace d = io::detail;

int32_t checked_id(const nlohmann::json& v, const std::string& src, const char* field, int vocab) {
  check(v.is_number_integer() && v.get<long long>() >= 0 && v.get<long long>() < vocab, src, ": field \"", field,
        "\" holds ", d::describe(v), ", not a token id of the vocabulary of ", vocab);
  return static_cast<int32_t>(v.get<long long>());
}

}  // namespace

GenerationDefaults read_generation_config(const std::filesystem::path& dir, int vocab) {
  GenerationDefaults g;
  const std::filesystem::path file = dir / "generation_config.json";
  if (!std::filesystem::exists(file)) return g;
  const nlohmann::json j = io::read_json_file(file);
  const std::string src = file.string();
  check(j.is_object(), src, ": expected a JSON object, got ", d::type_name(j));
  if (const auto it = j.find("eos_token_id"); it != j.end() && !it->is_null()) {
    if (it->is_array()) {
      for (const auto& v : *it) g.end_ids.push_back(checked_id(v, src, "eos_token_id", vocab));
    } else {
      g.end_ids.push_back(checked_id(*it, src, "eos_token_id", vocab));
    }
  }
  if (const auto it = j.find("pad_token_id"); it != j.end() && !it->is_null())
    g.pad_id = checked_id(*it, src, "pad_token_id", vocab);
  // Each field within what a request may ask for (the server's ranges), checked whether or not
  // do_sample makes it count.
  const auto number = [&](const char* key, double fallback, double lo, double hi, bool open_lo) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    const bool ok = it->is_number() && (open_lo ? it->get<double>() > lo : it->get<double>() >= lo) &&
                    it->get<double>() <= hi;
    check(ok, src, ": field \"", key, "\" must be a number in ", open_lo ? "(" : "[", lo, ", ", hi, "], got ",
          d::describe(*it));
    return it->get<double>();
  };
  bool sample = false;
  if (const auto it = j.find("do_sample"); it != j.end() && !it->is_null()) {
    check(it->is_boolean(), src, ": field \"do_sample\" must be true or false, got ", d::describe(*it));
    sample = it->get<bool>();
  }
  const double temperature = number("temperature", 1.0, 0.0, 2.0, false);
  const double top_p = number("top_p", 1.0, 0.0, 1.0, true);
  double top_k = 0.0;
  if (const auto it = j.find("top_k"); it != j.end() && !it->is_null()) {
    check(it->is_number_integer() && it->get<long long>() >= 0 && it->get<long long>() <= (1 << 24), src,
          ": field \"top_k\" must be an integer in [0, 16777216], got ", d::describe(*it));
    top_k = static_cast<double>(it->get<long long>());
  }
  const double penalty = number("repetition_penalty", 1.0, 0.01, 100.0, false);
  if (sample) {
    g.sampling.temperature = static_cast<float>(temperature);
    g.sampling.top_p = static_cast<float>(top_p);
    g.sampling.top_k = static_cast<std::size_t>(top_k);
  }
  g.sampling.repetition_penalty = static_cast<float>(penalty);
  return g;
}

}  // namespace il::models
