// nomic-bert (nomic-embed-text v1 / v1.5) as an embedder: a post-norm BERT-like encoder without
// position embeddings (rotary embeddings on q and k instead, whole or partial heads, rotate-half
// or interleaved pairs), a fused Wqkv projection, and a SwiGLU (or GeGLU, or plain GELU) MLP.
// Tensor names are the release checkpoints' (nomic-ai's contrib modeling_hf_nomic_bert.py):
// embeddings.word_embeddings, embeddings.token_type_embeddings, emb_ln, and per layer
// encoder.layers.N.{attn.Wqkv, attn.out_proj, mlp.fc11, mlp.fc12 (or mlp.fc1), mlp.fc2, norm1,
// norm2}; no prefix, or "bert." in a NomicBertForPreTraining export. A folder saved by
// transformers' own NomicBertModel (config with hidden_size...) has the same model under other
// names (models/nomic_config.h), read too.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/model.h"
#include "models/nomic_config.h"

namespace il::models {

// The registry's builders (models/registry.h).
BuiltModel build_nomic_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                              const std::string& source);
BuiltModel build_nomic_random(const nlohmann::json& config, const std::string& source);

// The tensors a checkpoint of this config's layout holds (no prefix).
std::map<std::string, std::vector<int64_t>> nomic_tensors(const NomicConfig& cfg);

}  // namespace il::models
