// config.json of a nomic-bert folder (nomic-embed-text v1 / v1.5: model_type "nomic_bert"). The
// release configs are GPT2Config-style with their own field names (n_embd, n_layer, n_head,
// n_inner, layer_norm_epsilon, activation_function, rotary_emb_*...), read by nomic-ai's contrib
// modeling file (modeling_hf_nomic_bert.py), whose arithmetic this follows. Features this engine
// does not implement (pre-norm blocks, causal attention, dynamic-NTK rotary scaling, grouped
// key-value heads, the "glu" sigmoid gate, rotary over the head axis) are refused naming the field.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "inferencelayer/types.h"

namespace il::models {

struct NomicConfig {
  // Which config (and tensor) layout the folder has: the release's (nomic-ai's contrib classes:
  // n_embd..., attn.Wqkv, mlp.fc11 / fc12, norm1 / norm2), or what transformers' own
  // NomicBertModel (5.x) saves (hidden_size..., self_attn.q_proj / k_proj / v_proj / o_proj,
  // mlp.gate_proj / up_proj / down_proj, post_attention_layernorm / post_mlp_layernorm,
  // embeddings.LayerNorm; no biases but the norms').
  bool transformers_layout = false;
  std::string model_type;
  std::string architecture;   // architectures[0]; NomicBertModel when absent
  int hidden = 0;             // n_embd
  int layers = 0;             // n_layer
  int heads = 0;              // n_head
  int head_dim = 0;           // n_embd / n_head
  // The MLP's hidden width as the tensors hold it: for the gated forms (swiglu, geglu) n_inner
  // (or int(8 n_embd / 3) when null) rounded up to a multiple of 256, as the contrib GatedMLP
  // does; for the plain GELU MLP n_inner (or 4 n_embd).
  int intermediate = 0;
  int n_inner = 0;            // the field as written (0: null)
  int vocab = 0;              // vocab_size rounded up to pad_vocab_size_multiple
  int type_vocab = 0;         // type_vocab_size (0: no token-type table)
  int max_positions = 0;      // n_positions: the longest input accepted
  int max_trained_positions = 0;
  float layer_norm_eps = 1e-12f;
  bool gated = true;          // swiglu / geglu: fc2(fc11(x) ⊙ act(fc12(x))); else fc2(act(fc1(x)))
  Activation act = Activation::kSilu;
  std::string activation_function;
  float rotary_base = 1000.0f;  // rotary_emb_base
  float rotary_fraction = 1.0f;
  int rotary_dim = 0;           // head_dim · rotary_emb_fraction (even; 0: no rotary embeddings)
  bool rotary_interleaved = false;
  bool qkv_bias = true;         // qkv_proj_bias: Wqkv and out_proj
  bool fc1_bias = true;         // mlp_fc1_bias: fc11 / fc12 (fc1)
  bool fc2_bias = true;         // mlp_fc2_bias
  bool random_weights = false;
};

// Throws il::Error naming `source` and the field. A config with hidden_size and without n_embd is
// read as transformers' NomicBertConfig.
NomicConfig parse_nomic_config(const nlohmann::json& j, const std::string& source);

}  // namespace il::models
