#include "models/lfm2_config.h"

#include <climits>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_util.h"
#include "ops/short_conv.h"

namespace il::models {
namespace {

using nlohmann::json;
namespace d = io::detail;

constexpr long long kMaxDim = 1LL << 24;

// One rope parameter object ({"rope_type": "default", "rope_theta": θ}): the plain rotary
// embedding only; scaled variants change the angles and are refused.
float rope_object(const json& o, const std::string& field, const std::string& src, float theta) {
  check(o.is_object(), src, ": field \"", field, "\" must be an object, got ", d::describe(o));
  for (const char* key : {"rope_type", "type"})
    if (const auto type = d::opt_string(o, key, src + " (" + field + ")"))
      check(*type == "default", src, ": field \"", field, "\".", key, " = \"", *type,
            "\" is not supported (supported: default)");
  return d::opt_positive_float(o, "rope_theta", src + " (" + field + ")", theta);
}

// rope_theta (or the original files' "theta"), then rope_parameters (transformers 5: one object,
// or one per layer type, of which the attention layers' counts) or rope_scaling.
float read_rope_theta(const json& j, const std::string& src) {
  float theta = d::opt_positive_float(j, "theta", src, 1e6f);
  theta = d::opt_positive_float(j, "rope_theta", src, theta);
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    check(it->is_object(), src, ": field \"", key, "\" must be an object, got ", d::describe(*it));
    if (const auto per_type = it->find("full_attention"); per_type != it->end()) {
      if (!per_type->is_null()) theta = rope_object(*per_type, std::string(key) + ".full_attention", src, theta);
      continue;
    }
    theta = rope_object(*it, key, src, theta);
  }
  return theta;
}

}  // namespace

int lfm2_intermediate(long long ff, bool auto_adjust, const double* multiplier, long long multiple_of) {
  // Python's int() of a float quotient: truncation, in double as Python computes it.
  double width = static_cast<double>(ff);
  if (auto_adjust) {
    width = std::trunc(2.0 * width / 3.0);
    if (multiplier != nullptr) {
      width = std::trunc(*multiplier * width);
      const double m = static_cast<double>(multiple_of);
      width = m * std::floor((width + m - 1) / m);
    }
  }
  return static_cast<int>(width);
}

int Lfm2Config::attention_layers() const {
  int n = 0;
  for (const bool a : attention_layer) n += a ? 1 : 0;
  return n;
}

Lfm2Config parse_lfm2_config(const json& j, const std::string& src) {
  check(j.is_object(), src, ": expected a JSON object, got ", d::type_name(j));
  Lfm2Config c;
  c.model_type = d::req_string(j, "model_type", src);
  check(c.model_type == "lfm2", src, ": model_type \"", c.model_type, "\" is not lfm2");
  if (const auto it = j.find("architectures"); it != j.end() && !it->is_null()) {
    check(it->is_array() && !it->empty() && it->front().is_string(), src,
          ": field \"architectures\" must be an array of strings, got ", d::describe(*it));
    c.architecture = it->front().get<std::string>();
  }
  if (c.architecture.empty()) c.architecture = "Lfm2Model";
  check(c.architecture == "Lfm2Model" || c.architecture == "Lfm2ForCausalLM", src, ": architecture \"",
        c.architecture, "\" is not supported for lfm2 (supported: Lfm2Model, Lfm2ForCausalLM: their trunk's hidden states)");
  c.causal_lm = c.architecture == "Lfm2ForCausalLM";

  c.hidden = d::int_in_range(j, "hidden_size", src, 1, kMaxDim);
  c.layers = d::int_in_range(j, "num_hidden_layers", src, 1, kMaxDim);
  c.heads = d::int_in_range(j, "num_attention_heads", src, 1, kMaxDim);
  c.kv_heads = d::int_in_range(j, "num_key_value_heads", src, 1, kMaxDim, c.heads);
  check(c.heads % c.kv_heads == 0, src, ": field \"num_key_value_heads\" = ", c.kv_heads,
        " does not divide \"num_attention_heads\" = ", c.heads);
  // Lfm2Attention: head_dim from the config when it has one, else hidden / heads.
  if (c.hidden % c.heads == 0)
    c.head_dim = d::int_in_range(j, "head_dim", src, 2, 1024, c.hidden / c.heads);
  else
    c.head_dim = d::int_in_range(j, "head_dim", src, 2, 1024);
  check(c.head_dim % 2 == 0, src, ": field \"head_dim\" = ", c.head_dim, " must be even (rotary pairs)");
  c.vocab = d::int_in_range(j, "vocab_size", src, 1, INT_MAX);
  c.max_positions = d::int_in_range(j, "max_position_embeddings", src, 1, 1LL << 30, 128000);
  c.norm_eps = d::opt_positive_float(j, "norm_eps", src, 1e-5f);
  c.rope_theta = read_rope_theta(j, src);
  c.random_weights = d::opt_bool(j, "inferencelayer_random_weights", src).value_or(false);

  // The MLP width: block_ff_dim (the original files' key) wins over intermediate_size, as in
  // Lfm2Config; then Lfm2MLP's adjustment.
  const char* ff_key = j.contains("block_ff_dim") && !j.at("block_ff_dim").is_null() ? "block_ff_dim" : "intermediate_size";
  const long long ff = d::int_in_range(j, ff_key, src, 1, kMaxDim, 12288);
  const bool auto_adjust = d::opt_bool(j, "block_auto_adjust_ff_dim", src).value_or(true);
  const long long multiple_of = d::int_in_range(j, "block_multiple_of", src, 1, kMaxDim, 256);
  double multiplier = 1.0;  // Lfm2Config's default; null means "none" (no multiplier, no rounding)
  const double* mult = &multiplier;
  if (const auto it = j.find("block_ffn_dim_multiplier"); it != j.end()) {
    if (it->is_null()) {
      mult = nullptr;
    } else {
      const auto v = d::opt_number(j, "block_ffn_dim_multiplier", src);
      check(v && *v > 0 && *v < 1e6, src, ": field \"block_ffn_dim_multiplier\" = ", d::describe(*it),
            " must be a positive number");
      multiplier = *v;
    }
  }
  const int inner = lfm2_intermediate(ff, auto_adjust, mult, multiple_of);
  check(inner >= 1 && inner <= kMaxDim, src, ": the MLP width derived from \"", ff_key, "\" = ", ff, " is ", inner,
        " (block_auto_adjust_ff_dim, block_ffn_dim_multiplier, block_multiple_of), outside 1..", kMaxDim);
  c.intermediate = inner;

  // Gated short convolutions: no bias; the CUDA kernel's limit on the filter length.
  check(!d::opt_bool(j, "conv_bias", src).value_or(false), src,
        ": field \"conv_bias\" = true is not supported (biased conv layers)");
  c.conv_taps = d::int_in_range(j, "conv_L_cache", src, 1, static_cast<long long>(ops::kShortConvMaxTaps), 3);

  // Layer kinds: layer_types, else full_attn_idxs (default: every layer attends).
  c.attention_layer.assign(static_cast<std::size_t>(c.layers), true);
  if (const auto it = j.find("layer_types"); it != j.end() && !it->is_null()) {
    check(it->is_array() && it->size() == static_cast<std::size_t>(c.layers), src,
          ": field \"layer_types\" must be an array of num_hidden_layers = ", c.layers, " strings, got ",
          d::describe(*it));
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& t = (*it)[i];
      const bool known = t.is_string() && (t.get<std::string>() == "full_attention" || t.get<std::string>() == "conv");
      check(known, src, ": field \"layer_types\"[", i, "] = ", d::describe(t),
            " is not supported (supported: full_attention, conv)");
      c.attention_layer[i] = t.get<std::string>() == "full_attention";
    }
  } else if (const auto idx = j.find("full_attn_idxs"); idx != j.end() && !idx->is_null()) {
    check(idx->is_array(), src, ": field \"full_attn_idxs\" must be an array of layer indices, got ",
          d::describe(*idx));
    c.attention_layer.assign(static_cast<std::size_t>(c.layers), false);
    for (const json& v : *idx) {
      check(v.is_number_integer() && v.get<long long>() >= 0 && v.get<long long>() < c.layers, src,
            ": field \"full_attn_idxs\" holds ", d::describe(v), " (layer indices 0..", c.layers - 1, ")");
      c.attention_layer[static_cast<std::size_t>(v.get<long long>())] = true;
    }
  }
  return c;
}

}  // namespace il::models
