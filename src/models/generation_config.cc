#include "models/generation_config.h"

#include <algorithm>
#include <cmath>

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
  const auto number = [&](const char* key, double fallback) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    check(it->is_number() && std::isfinite(it->get<double>()), src, ": field \"", key, "\" must be a number, got ",
          d::describe(*it));
    return it->get<double>();
  };
  bool sample = false;
  if (const auto it = j.find("do_sample"); it != j.end() && !it->is_null()) {
    check(it->is_boolean(), src, ": field \"do_sample\" must be true or false, got ", d::describe(*it));
    sample = it->get<bool>();
  }
  if (sample) {
    g.sampling.temperature = static_cast<float>(number("temperature", 1.0));
    g.sampling.top_p = static_cast<float>(number("top_p", 1.0));
    g.sampling.top_k = static_cast<std::size_t>(std::max(0.0, number("top_k", 0.0)));
  }
  g.sampling.repetition_penalty = static_cast<float>(number("repetition_penalty", 1.0));
  return g;
}

}  // namespace il::models
