#include "models/nomic_config.h"

#include <climits>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/hf_config.h"
#include "io/json_util.h"

namespace il::models {
namespace {

using nlohmann::json;
namespace d = io::detail;

constexpr long long kMaxDim = 1LL << 24;

// A boolean feature switch this engine implements only one way: absent or null reads as the
// contrib class's default, anything else must equal `supported`.
void require_bool(const json& j, const char* key, const std::string& src, bool supported, const char* what) {
  const auto v = d::opt_bool(j, key, src);
  if (v) check(*v == supported, src, ": field \"", key, "\" = ", *v ? "true" : "false", " is not supported (", what, ")");
}

// transformers' NomicBertConfig (5.x), as its NomicBertModel saves it: a post-norm encoder with
// bias-free projections, a gated MLP act(gate_proj) ⊙ up_proj (intermediate_size as written),
// whole-head rotate-half rotary embeddings at rope_parameters' theta. Checked on the GPU machine:
// given the release tensors mapped by role, transformers 5.17's NomicBertModel gives the contrib
// arithmetic's last hidden states exactly (tools/oracle/make_nomic_fixtures.py).
NomicConfig parse_transformers_layout(const json& j, const std::string& src, NomicConfig c) {
  c.transformers_layout = true;
  check(c.architecture == "NomicBertModel", src, ": architecture \"", c.architecture,
        "\" is not supported for a transformers nomic_bert config (supported: NomicBertModel)");
  c.hidden = d::int_in_range(j, "hidden_size", src, 1, kMaxDim);
  c.layers = d::int_in_range(j, "num_hidden_layers", src, 1, kMaxDim);
  c.heads = d::int_in_range(j, "num_attention_heads", src, 1, kMaxDim);
  check(c.hidden % c.heads == 0, src, ": field \"hidden_size\" = ", c.hidden,
        " is not a multiple of \"num_attention_heads\" = ", c.heads);
  c.head_dim = d::int_in_range(j, "head_dim", src, 2, 1024, c.hidden / c.heads);
  check(c.head_dim * c.heads == c.hidden, src, ": field \"head_dim\" = ", c.head_dim,
        " is not supported (supported: hidden_size / num_attention_heads = ", c.hidden / c.heads, ")");
  c.intermediate = d::int_in_range(j, "intermediate_size", src, 1, kMaxDim);
  c.n_inner = c.intermediate;
  c.activation_function = d::opt_string(j, "hidden_act", src).value_or("gelu");
  c.act = io::parse_activation(c.activation_function, src);
  c.gated = true;
  c.vocab = d::int_in_range(j, "vocab_size", src, 1, INT_MAX);
  c.type_vocab = d::int_in_range(j, "type_vocab_size", src, 0, kMaxDim, 2);
  c.max_positions = d::int_in_range(j, "max_position_embeddings", src, 1, kMaxDim, 2048);
  c.max_trained_positions = c.max_positions;
  c.layer_norm_eps = d::opt_positive_float(j, "layer_norm_eps", src, 1e-12f);
  const auto rope = j.find("rope_parameters");
  check(rope != j.end() && rope->is_object(), src,
        ": field \"rope_parameters\" (an object with rope_theta) is required in a transformers nomic_bert config");
  if (const auto type = d::opt_string(*rope, "rope_type", src + " (rope_parameters)"))
    check(*type == "default", src, ": field \"rope_parameters\".rope_type = \"", *type,
          "\" is not supported (supported: default)");
  const auto theta = d::opt_number(*rope, "rope_theta", src + " (rope_parameters)");
  check(theta && *theta > 0, src, ": field \"rope_parameters\".rope_theta must be a positive number");
  c.rotary_base = static_cast<float>(*theta);
  c.rotary_fraction = 1.0f;
  c.rotary_dim = c.head_dim;
  // The release's rotary fields ride along in such a config; only the values transformers' class
  // was checked against are accepted.
  if (const auto f = d::opt_number(j, "rotary_emb_fraction", src))
    check(*f == 1.0, src, ": field \"rotary_emb_fraction\" = ", *f,
          " is not supported in a transformers nomic_bert config (supported: 1.0)");
  require_bool(j, "rotary_emb_interleaved", src, false, "interleaved rotary pairs in a transformers nomic_bert config");
  c.qkv_bias = c.fc1_bias = c.fc2_bias = false;
  c.random_weights = d::opt_bool(j, "inferencelayer_random_weights", src).value_or(false);
  return c;
}

}  // namespace

NomicConfig parse_nomic_config(const json& j, const std::string& src) {
  check(j.is_object(), src, ": expected a JSON object, got ", d::type_name(j));
  NomicConfig c;
  c.model_type = d::req_string(j, "model_type", src);
  check(c.model_type == "nomic_bert", src, ": model_type \"", c.model_type, "\" is not nomic_bert");
  if (const auto it = j.find("architectures"); it != j.end() && !it->is_null()) {
    check(it->is_array() && !it->empty() && it->front().is_string(), src,
          ": field \"architectures\" must be an array of strings, got ", d::describe(*it));
    c.architecture = it->front().get<std::string>();
  }
  if (c.architecture.empty()) c.architecture = "NomicBertModel";
  if (!j.contains("n_embd") && j.contains("hidden_size")) return parse_transformers_layout(j, src, std::move(c));
  // The embedders; a pre-training export (NomicBertForPreTraining: a "bert." prefix and an MLM
  // head) still holds the same encoder, which is all an embedding reads.
  check(c.architecture == "NomicBertModel" || c.architecture == "NomicBertForPreTraining", src, ": architecture \"",
        c.architecture, "\" is not supported for nomic_bert (supported: NomicBertModel, NomicBertForPreTraining)");

  c.hidden = d::int_in_range(j, "n_embd", src, 1, kMaxDim);
  c.layers = d::int_in_range(j, "n_layer", src, 1, kMaxDim);
  c.heads = d::int_in_range(j, "n_head", src, 1, kMaxDim);
  check(c.hidden % c.heads == 0, src, ": field \"n_embd\" = ", c.hidden, " is not a multiple of \"n_head\" = ", c.heads);
  c.head_dim = c.hidden / c.heads;
  if (const auto kv = d::opt_int(j, "num_heads_kv", src))
    check(*kv == c.heads, src, ": field \"num_heads_kv\" = ", *kv, " is not supported (grouped key-value heads; ",
          "supported: equal to \"n_head\" = ", c.heads, ")");

  // The contrib block: "swiglu" → silu gate, "geglu" → exact-GELU gate, both through the gated
  // MLP (fc11, fc12, fc2); "glu" → a sigmoid gate (not implemented). Every other name it accepts
  // takes the plain MLP (fc1, fc2) with F.gelu, the exact erf form, whatever the name says.
  c.activation_function = d::opt_string(j, "activation_function", src).value_or("gelu_new");
  const std::string& a = c.activation_function;
  if (a == "swiglu" || a == "geglu") {
    c.gated = true;
    c.act = a == "swiglu" ? Activation::kSilu : Activation::kGeluErf;
  } else if (a == "gelu" || a == "gelu_new" || a == "gelu_fast" || a == "gelu_pytorch_tanh") {
    c.gated = false;
    c.act = Activation::kGeluErf;
  } else {
    throw make_error(src, ": field \"activation_function\" = \"", a,
                     "\" is not supported (supported: swiglu, geglu, gelu, gelu_new, gelu_fast, gelu_pytorch_tanh)");
  }
  c.n_inner = d::int_in_range(j, "n_inner", src, 1, kMaxDim, 0);
  if (c.gated) {
    const long long inner = c.n_inner > 0 ? c.n_inner : static_cast<long long>(8.0 * c.hidden / 3.0);
    c.intermediate = static_cast<int>((inner + 255) / 256 * 256);
  } else {
    c.intermediate = c.n_inner > 0 ? c.n_inner : 4 * c.hidden;
  }

  const int vocab = d::int_in_range(j, "vocab_size", src, 1, INT_MAX);
  const int multiple = d::int_in_range(j, "pad_vocab_size_multiple", src, 1, 1 << 20, 1);
  c.vocab = static_cast<int>((static_cast<long long>(vocab) + multiple - 1) / multiple * multiple);
  check(c.vocab > 0, src, ": field \"vocab_size\" = ", vocab, " padded to a multiple of ", multiple, " is too large");
  c.type_vocab = d::int_in_range(j, "type_vocab_size", src, 0, kMaxDim, 2);
  c.max_positions = d::int_in_range(j, "n_positions", src, 1, kMaxDim, 2048);
  c.max_trained_positions = d::int_in_range(j, "max_trained_positions", src, 1, kMaxDim, 2048);
  c.layer_norm_eps = d::opt_positive_float(j, "layer_norm_epsilon", src, 1e-5f);

  // Rotary embeddings on the first head_dim · rotary_emb_fraction columns of each q / k head.
  // A fraction of 0 (the class default) means learned absolute positions instead: not implemented.
  const double fraction = d::opt_number(j, "rotary_emb_fraction", src).value_or(0.0);
  check(fraction > 0 && fraction <= 1, src, ": field \"rotary_emb_fraction\" = ", fraction,
        " is not supported (supported: 0 < fraction ≤ 1, rotary embeddings; 0 means learned absolute position ",
        "embeddings, which nomic-bert checkpoints do not use)");
  const double rdim = c.head_dim * fraction;
  c.rotary_dim = static_cast<int>(rdim);
  check(static_cast<double>(c.rotary_dim) == rdim && c.rotary_dim % 2 == 0 && c.rotary_dim > 0, src,
        ": field \"rotary_emb_fraction\" = ", fraction, " gives ", rdim, " rotary columns of a head of ", c.head_dim,
        " (must be a positive even whole number)");
  c.rotary_fraction = static_cast<float>(fraction);
  c.rotary_base = d::opt_positive_float(j, "rotary_emb_base", src, 10000.0f);
  c.rotary_interleaved = d::opt_bool(j, "rotary_emb_interleaved", src).value_or(false);
  // Dynamic NTK scaling changes the angles with the batch's longest sequence (past
  // max_trained_positions): not implemented. 0 / null are the plain rotary embeddings.
  if (const auto f = d::opt_number(j, "rotary_scaling_factor", src))
    check(*f == 0, src, ": field \"rotary_scaling_factor\" = ", *f,
          " is not supported (dynamic-NTK rotary scaling; supported: null)");
  // rotary_emb_scale_base (xPos) is read by the contrib class only inside the NTK form refused
  // above; its plain rotary embedding computes cos / sin without it, so any value is accepted.
  require_bool(j, "rotary_head_dim", src, false, "rotary embeddings over the head axis");

  c.qkv_bias = d::opt_bool(j, "qkv_proj_bias", src).value_or(true);
  c.fc1_bias = d::opt_bool(j, "mlp_fc1_bias", src).value_or(true);
  c.fc2_bias = d::opt_bool(j, "mlp_fc2_bias", src).value_or(true);
  require_bool(j, "prenorm", src, false, "pre-norm blocks; supported: false, the post-norm nomic-embed layout");
  require_bool(j, "causal", src, false, "causal attention; supported: false, a bidirectional encoder");
  require_bool(j, "parallel_block", src, false, "parallel attention and MLP blocks");
  require_bool(j, "use_rms_norm", src, false, "RMSNorm; supported: false, LayerNorm");
  c.random_weights = d::opt_bool(j, "inferencelayer_random_weights", src).value_or(false);
  return c;
}

}  // namespace il::models
