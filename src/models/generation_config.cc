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
  return g;
}

}  // namespace il::models
