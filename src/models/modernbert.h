// ModernBERT (answerdotai/ModernBERT and the embedders / rerankers fine-tuned from it): a pre-norm
// encoder — token embeddings and a LayerNorm (bias only where norm_bias says), layers of fused-QKV
// bidirectional attention with rotary embeddings (one theta for global layers, another for
// sliding-window layers, whose tokens see local_attention / 2 keys on each side) and a GeGLU MLP
// (Wi [2I, H]: act(first half) ⊙ second half), layer 0 without an attention norm, and a final
// norm whose output is "hidden". As an embedder (ModernBertModel, a sentence-transformers folder)
// pooled as the folder says; as ModernBertForSequenceClassification, scored by its head: the
// CLS row or the mean of the final hidden states (classifier_pooling) → dense → activation →
// LayerNorm → classifier.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/model.h"
#include "models/modernbert_config.h"

namespace il::models {

// The registry's builders (models/registry.h).
BuiltModel build_modernbert_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                                   const std::string& source);
BuiltModel build_modernbert_random(const nlohmann::json& config, const std::string& source);

// The tensors transformers saves for this config: the encoder under `prefix` ("" for a
// ModernBertModel, "model." inside the task models), plus the classification head's.
std::map<std::string, std::vector<int64_t>> modernbert_tensors(const ModernBertConfig& cfg, const std::string& prefix);

}  // namespace il::models
