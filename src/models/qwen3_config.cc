#include "models/qwen3_config.h"

#include <climits>
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

// rope_parameters (transformers 5) or rope_theta / rope_scaling (earlier files): the plain rotary
// embedding only. Scaled variants (yarn, linear, dynamic...) change the angles: refused.
float read_rope_theta(const json& j, const std::string& src) {
  float theta = d::opt_positive_float(j, "rope_theta", src, 1e6f);
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    check(it->is_object(), src, ": field \"", key, "\" must be an object, got ", d::describe(*it));
    const std::string field = std::string(key);
    if (const auto type = d::opt_string(*it, "rope_type", src + " (" + field + ")"))
      check(*type == "default", src, ": field \"", key, "\".rope_type = \"", *type,
            "\" is not supported (supported: default)");
    if (const auto type = d::opt_string(*it, "type", src + " (" + field + ")"))
      check(*type == "default", src, ": field \"", key, "\".type = \"", *type,
            "\" is not supported (supported: default)");
    theta = d::opt_positive_float(*it, "rope_theta", src + " (" + field + ")", theta);
  }
  return theta;
}

}  // namespace

Qwen3Config parse_qwen3_config(const json& j, const std::string& src) {
  check(j.is_object(), src, ": expected a JSON object, got ", d::type_name(j));
  Qwen3Config c;
  c.model_type = d::req_string(j, "model_type", src);
  check(c.model_type == "qwen3", src, ": model_type \"", c.model_type, "\" is not qwen3");
  if (const auto it = j.find("architectures"); it != j.end() && !it->is_null()) {
    check(it->is_array() && !it->empty() && it->front().is_string(), src,
          ": field \"architectures\" must be an array of strings, got ", d::describe(*it));
    c.architecture = it->front().get<std::string>();
  }
  if (c.architecture.empty()) c.architecture = "Qwen3Model";
  check(c.architecture == "Qwen3Model" || c.architecture == "Qwen3ForCausalLM", src, ": architecture \"",
        c.architecture,
        "\" is not supported for qwen3 (supported: Qwen3Model, an embedder such as Qwen3-Embedding; "
        "Qwen3ForCausalLM, scored as Qwen3-Reranker is)");
  c.causal_lm = c.architecture == "Qwen3ForCausalLM";

  c.hidden = d::int_in_range(j, "hidden_size", src, 1, kMaxDim);
  c.layers = d::int_in_range(j, "num_hidden_layers", src, 1, kMaxDim);
  c.heads = d::int_in_range(j, "num_attention_heads", src, 1, kMaxDim);
  c.kv_heads = d::int_in_range(j, "num_key_value_heads", src, 1, kMaxDim, c.heads);
  check(c.heads % c.kv_heads == 0, src, ": field \"num_key_value_heads\" = ", c.kv_heads,
        " does not divide \"num_attention_heads\" = ", c.heads);
  if (c.hidden % c.heads == 0)
    c.head_dim = d::int_in_range(j, "head_dim", src, 2, 1024, c.hidden / c.heads);
  else
    c.head_dim = d::int_in_range(j, "head_dim", src, 2, 1024);
  check(c.head_dim % 2 == 0, src, ": field \"head_dim\" = ", c.head_dim, " must be even (rotary pairs)");
  c.intermediate = d::int_in_range(j, "intermediate_size", src, 1, kMaxDim);
  c.vocab = d::int_in_range(j, "vocab_size", src, 1, INT_MAX);
  c.max_positions = d::int_in_range(j, "max_position_embeddings", src, 1, kMaxDim);
  c.rms_eps = d::opt_positive_float(j, "rms_norm_eps", src, 1e-6f);
  c.rope_theta = read_rope_theta(j, src);
  c.act = io::parse_activation(d::opt_string(j, "hidden_act", src).value_or("silu"), src);
  c.attention_bias = d::opt_bool(j, "attention_bias", src).value_or(false);
  c.tie_word_embeddings = d::opt_bool(j, "tie_word_embeddings", src).value_or(false);
  c.random_weights = d::opt_bool(j, "inferencelayer_random_weights", src).value_or(false);

  // Sliding-window layers attend to the last `sliding_window` tokens only; not implemented.
  check(!d::opt_bool(j, "use_sliding_window", src).value_or(false), src,
        ": field \"use_sliding_window\" = true is not supported (sliding-window attention layers)");
  if (const auto it = j.find("layer_types"); it != j.end() && !it->is_null()) {
    check(it->is_array(), src, ": field \"layer_types\" must be an array of strings, got ", d::describe(*it));
    for (const json& t : *it)
      check(t.is_string() && t.get<std::string>() == "full_attention", src, ": field \"layer_types\" holds ",
            d::describe(t), " (supported: full_attention)");
  }
  return c;
}

}  // namespace il::models
