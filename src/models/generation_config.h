// generation_config.json of a generating folder: the token ids that end a sequence
// (eos_token_id: one id or a list; any of them stops generation) and the pad id.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace il::models {

struct GenerationDefaults {
  std::vector<int32_t> end_ids;
  std::optional<int32_t> pad_id;
};

// The file in `dir` if present (else nothing: no end ids), every id checked against the
// vocabulary. Errors name the file and field.
GenerationDefaults read_generation_config(const std::filesystem::path& dir, int vocab);

}  // namespace il::models
