// Qwen3 as an embedder (Qwen3-Embedding: last-token pooling) and as a reranker (Qwen3-Reranker:
// the last token's "yes" logit against its "no" logit). Both folders name Qwen3ForCausalLM, so
// the role comes from the folder: a sentence-transformers folder (modules.json) or a Qwen3Model
// is an embedder; a Qwen3ForCausalLM without modules.json is scored as the reranker. A config
// alone (random weights) is an embedder unless it sets "_inferencelayer_task": "score".
// A pre-norm decoder: RMSNorm, grouped-query causal attention with per-head q / k RMSNorm before
// rotary embeddings, a SwiGLU MLP, and a final RMSNorm whose output is "hidden".
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/model.h"
#include "models/qwen3_config.h"

namespace il::models {

// The registry's builders (models/registry.h).
BuiltModel build_qwen3_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                              const std::string& source);
BuiltModel build_qwen3_random(const nlohmann::json& config, const std::string& source);

// The tensors transformers saves for this config under `prefix` ("" for a Qwen3Model, "model."
// inside a Qwen3ForCausalLM, which adds lm_head.weight unless its embeddings are tied).
std::map<std::string, std::vector<int64_t>> qwen3_tensors(const Qwen3Config& cfg, const std::string& prefix);

// Qwen3-Reranker's prompt, as its model card formats a (query, document) pair.
PairTemplate qwen3_reranker_template();

}  // namespace il::models
