// LFM2 (Liquid AI's hybrid: gated short causal convolutions and grouped-query attention layers)
// as a text encoder: the trunk of LFM2-ColBERT folders. A pre-norm stack: each layer is, as
// config.json's layer_types (or full_attn_idxs) says, either causal attention with per-head q / k
// RMSNorm before rotary embeddings, or a gated short convolution (in_proj → B | C | x,
// C ⊙ causal depthwise conv of B ⊙ x, out_proj); then a SwiGLU MLP (w1 gate, w3 up, w2 down);
// a final RMSNorm (embedding_norm) whose output is "hidden".
//
// A folder without sentence-transformers modules is served as sentence-transformers serves a
// plain transformers folder: mean pooling, not normalised. A PyLate (ColBERT) folder (Transformer
// + Dense, no Pooling) builds its per-token head too (program "tokens": Dense on every token,
// then L2), but the engine serves its hidden states only so far; other module layouts are refused.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/lfm2_config.h"
#include "models/model.h"

namespace il::models {

// The registry's builders (models/registry.h).
BuiltModel build_lfm2_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                             const std::string& source);
BuiltModel build_lfm2_random(const nlohmann::json& config, const std::string& source);

// The tensors transformers saves for this config under `prefix` ("" for an Lfm2Model,
// "model." inside an Lfm2ForCausalLM).
std::map<std::string, std::vector<int64_t>> lfm2_tensors(const Lfm2Config& cfg, const std::string& prefix);

}  // namespace il::models
