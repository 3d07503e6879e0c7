// config.json of a ModernBERT folder (transformers' ModernBertConfig): the fields that change the
// math, in either of the two forms checkpoints carry — the Hub's (global_attn_every_n_layers,
// global_rope_theta, local_rope_theta) and the one transformers 5 saves (layer_types with
// full_attention / sliding_attention, rope_parameters per layer type). Features this engine does
// not implement (scaled rope, heads other than sequence classification) are refused naming the field.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "inferencelayer/types.h"

namespace il::models {

struct ModernBertConfig {
  std::string model_type;
  std::string architecture;      // ModernBertModel (also ModernBertForMaskedLM: its encoder) or
                                 // ModernBertForSequenceClassification
  bool is_classifier = false;    // ModernBertForSequenceClassification
  int hidden = 0, layers = 0, heads = 0, head_dim = 0, intermediate = 0;
  int vocab = 0;
  int max_positions = 0;
  Activation act = Activation::kGeluErf;  // hidden_activation
  float norm_eps = 1e-5f;
  bool norm_bias = false, attention_bias = false, mlp_bias = false;
  int local_attention = 128;              // a sliding layer's token sees local_attention / 2 keys each side
  std::vector<bool> sliding;              // per layer: sliding-window (true) or global attention
  float global_theta = 160000.0f, local_theta = 10000.0f;
  // Sequence classification head: pooled (CLS or mean) → dense (+ bias) → act → LayerNorm → classifier.
  PoolingMode classifier_pooling = PoolingMode::kCls;
  Activation classifier_act = Activation::kGeluErf;
  bool classifier_bias = false;
  int num_labels = 1;
  std::map<int, std::string> id2label;
  bool random_weights = false;

  float rope_theta(int layer) const { return sliding.at(static_cast<std::size_t>(layer)) ? local_theta : global_theta; }
  std::size_t window(int layer) const {
    return sliding.at(static_cast<std::size_t>(layer)) ? static_cast<std::size_t>(local_attention) : 0;
  }
};

// Throws il::Error naming `source` and the field.
ModernBertConfig parse_modernbert_config(const nlohmann::json& j, const std::string& source);

}  // namespace il::models
