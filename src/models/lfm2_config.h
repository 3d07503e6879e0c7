// config.json of an LFM2 trunk (transformers' Lfm2Config; the trunk of LFM2-ColBERT folders):
// the fields that change the math. Features this engine does not implement (conv biases, scaled
// rotary embeddings) are refused naming the field rather than ignored.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace il::models {

struct Lfm2Config {
  std::string model_type;
  std::string architecture;  // Lfm2Model, or Lfm2ForCausalLM (its trunk under "model.")
  bool causal_lm = false;
  int hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  // The MLP width transformers' Lfm2MLP derives (see intermediate_from), not a field as such.
  int intermediate = 0;
  int vocab = 0;
  int max_positions = 0;
  float norm_eps = 1e-5f;
  float rope_theta = 1e6f;
  int conv_taps = 3;  // conv_L_cache
  // One per layer: true for an attention layer, false for a gated short convolution.
  std::vector<bool> attention_layer;
  bool random_weights = false;

  int attention_layers() const;
};

// Throws il::Error naming `source` and the field.
Lfm2Config parse_lfm2_config(const nlohmann::json& j, const std::string& source);

// Lfm2MLP's width from the configured one (block_ff_dim, else intermediate_size): with
// block_auto_adjust_ff_dim, int(2 · ff / 3); then, when block_ffn_dim_multiplier is set (not
// null), int(multiplier · ff) rounded up to a multiple of block_multiple_of. As transformers
// computes it (the rounding sits inside the multiplier's branch there).
int lfm2_intermediate(long long ff, bool auto_adjust, const double* multiplier, long long multiple_of);

}  // namespace il::models
