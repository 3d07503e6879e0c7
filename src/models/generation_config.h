// generation_config.json of a generating folder: the token ids that end a sequence
// (eos_token_id: one id or a list; any of them stops generation) and the pad id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace il::models {

// What a request that leaves a sampling field out gets, as vLLM's OpenAI server takes the file:
// with do_sample true, its temperature, top_p and top_k (absent ones: 1, 1, no top-k); without
// it, greedy. repetition_penalty either way.
struct SamplingDefaults {
  float temperature = 0.0f;
  float top_p = 1.0f;
  std::size_t top_k = 0;
  float repetition_penalty = 1.0f;
};

struct GenerationDefaults {
  std::vector<int32_t> end_ids;
  std::optional<int32_t> pad_id;
  SamplingDefaults sampling;
};

// The file in `dir` if present (else nothing: no end ids), every id checked against the
// vocabulary. Errors name the file and field.
GenerationDefaults read_generation_config(const std::filesystem::path& dir, int vocab);

}  // namespace il::models
