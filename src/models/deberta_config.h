// config.json of a DeBERTa-v2 / v3 folder (model_type "deberta-v2"): the fields that change the
// math, with transformers' defaults where a field is absent; values whose features are not
// implemented are refused naming the file and the field.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "inferencelayer/types.h"

namespace il::models {

struct DebertaConfig {
  std::string model_type;
  std::vector<std::string> architectures;
  int hidden = 0, layers = 0, heads = 0, head_dim = 0, intermediate = 0, vocab = 0;
  // Width of the word / position / segment tables; when it differs from hidden, embed_proj (no
  // bias) maps their sum to hidden before the embeddings' LayerNorm.
  int embedding_size = 0;
  int type_vocab = 0;            // 0: no token-type table (v3); segment ids are then ignored
  int max_positions = 512;       // max_position_embeddings
  bool position_biased_input = true;  // absolute position table added to the word embeddings
  bool relative_attention = false;
  int max_relative = 0;          // max_relative_positions, resolved (< 1 → max_position_embeddings)
  int position_buckets = -1;     // > 0: log buckets
  int span = 0;                  // rows of the relative table are 2 · span
  bool c2p = false, p2c = false; // pos_att_type
  bool p2p_listed = false;       // "p2p" in pos_att_type: transformers' DebertaV2 reads it nowhere
  bool share_att_key = false;    // false: separate pos_key_proj / pos_query_proj
  bool norm_rel_ebd = false;     // "layer_norm": the relative table goes through encoder.LayerNorm
  float layer_norm_eps = 1e-7f;
  Activation act = Activation::kGeluErf;
  Activation pooler_act = Activation::kGeluErf;
  // The ConvLayer after the first layer (conv_kernel_size > 0, DeBERTa-v2 xlarge / xxlarge): a
  // Conv1d over each sequence (conv_groups groups, zero padding), masked, conv_act, then
  // LayerNorm(layer 0's output + that). 0: none.
  int conv_taps = 0;
  int conv_groups = 1;
  Activation conv_act = Activation::kTanh;
  bool is_cross_encoder = false;
  int num_labels = 1;
  std::map<int, std::string> id2label;
  bool random_weights = false;

  int scale_factor() const { return 1 + (c2p ? 1 : 0) + (p2c ? 1 : 0); }
  int rel_rows() const { return 2 * span; }
};

DebertaConfig parse_deberta_config(const nlohmann::json& j, const std::string& source_name);

}  // namespace il::models
