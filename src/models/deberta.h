// DeBERTa-v2 / v3 (model_type "deberta-v2"): a post-norm encoder with disentangled attention
// (content-to-position and position-to-content terms over relative positions in log buckets).
// The relative embeddings' LayerNorm and each layer's projections of them are folded at load into
// two f32 tables per layer (pos_key, pos_query: [2·span, hidden]); the attention is the plan's
// DisentangledAttentionStep. Heads: sentence-transformers pooling (embeddings) or
// DebertaV2ForSequenceClassification (ContextPooler: dense + pooler_hidden_act on the first
// token, then the classifier).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/deberta_config.h"
#include "models/model.h"

namespace il::models {

// The tensors a transformers export of this config holds (prefix "deberta." for a classifier).
std::map<std::string, std::vector<int64_t>> deberta_tensors(const DebertaConfig& cfg);

BuiltModel build_deberta_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                                const std::string& source);
BuiltModel build_deberta_random(const nlohmann::json& config, const std::string& source);

}  // namespace il::models
