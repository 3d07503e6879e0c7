// config.json of a Qwen3 folder (transformers' Qwen3Config): the fields that change the math.
// Features this engine does not implement (sliding-window layers, rope scaling) are refused
// naming the field rather than ignored.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "inferencelayer/types.h"

namespace il::models {

struct Qwen3Config {
  std::string model_type;
  // architectures[0]: Qwen3Model or Qwen3ForCausalLM. Qwen3-Embedding folders name the latter
  // too, so the role is the folder's (models/qwen3.h), not this field's.
  std::string architecture;
  bool causal_lm = false;    // Qwen3ForCausalLM
  int hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0;
  int vocab = 0;
  int max_positions = 0;
  float rms_eps = 1e-6f;
  float rope_theta = 1e6f;
  bool attention_bias = false;
  bool tie_word_embeddings = false;
  Activation act = Activation::kSilu;
  bool random_weights = false;
};

// Throws il::Error naming `source` and the field.
Qwen3Config parse_qwen3_config(const nlohmann::json& j, const std::string& source);

}  // namespace il::models
