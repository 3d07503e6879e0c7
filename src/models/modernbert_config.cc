#include "models/modernbert_config.h"

#include <climits>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/hf_config.h"
#include "io/json_util.h"
#include "models/classifier_labels.h"

namespace il::models {
namespace {

using nlohmann::json;
namespace d = io::detail;

constexpr long long kMaxDim = 1LL << 24;

bool opt_bool(const json& j, const char* key, const std::string& src, bool fallback) {
  return d::opt_bool(j, key, src).value_or(fallback);
}

// rope_parameters[kind] (transformers 5): the plain rotary embedding only; a scaled variant
// (yarn, linear, dynamic...) changes the angles and is refused.
float read_layer_theta(const json& rope, const char* kind, const std::string& src, float fallback) {
  const auto it = rope.find(kind);
  if (it == rope.end() || it->is_null()) return fallback;
  const std::string where = src + " (rope_parameters." + kind + ")";
  check(it->is_object(), src, ": field \"rope_parameters\".", kind, " must be an object, got ", d::describe(*it));
  for (const char* type_key : {"rope_type", "type"})
    if (const auto type = d::opt_string(*it, type_key, where))
      check(*type == "default", src, ": field \"rope_parameters\".", kind, ".", type_key, " = \"", *type,
            "\" is not supported (supported: default)");
  return d::opt_positive_float(*it, "rope_theta", where, fallback);
}

}  // namespace

ModernBertConfig parse_modernbert_config(const json& j, const std::string& src) {
  check(j.is_object(), src, ": expected a JSON object, got ", d::type_name(j));
  ModernBertConfig c;
  c.model_type = d::req_string(j, "model_type", src);
  check(c.model_type == "modernbert", src, ": model_type \"", c.model_type, "\" is not modernbert");
  if (const auto it = j.find("architectures"); it != j.end() && !it->is_null()) {
    check(it->is_array() && !it->empty() && it->front().is_string(), src,
          ": field \"architectures\" must be an array of strings, got ", d::describe(*it));
    c.architecture = it->front().get<std::string>();
  }
  if (c.architecture.empty()) c.architecture = "ModernBertModel";
  // ModernBertForMaskedLM holds the encoder under "model." with a prediction head this engine does
  // not serve: its encoder still gives embeddings and hidden states.
  check(c.architecture == "ModernBertModel" || c.architecture == "ModernBertForMaskedLM" ||
            c.architecture == "ModernBertForSequenceClassification",
        src, ": architecture \"", c.architecture,
        "\" is not supported for modernbert (supported: ModernBertModel, ModernBertForMaskedLM (its encoder), "
        "ModernBertForSequenceClassification)");
  c.is_classifier = c.architecture == "ModernBertForSequenceClassification";

  c.hidden = d::int_in_range(j, "hidden_size", src, 1, kMaxDim, 768);
  c.layers = d::int_in_range(j, "num_hidden_layers", src, 1, kMaxDim, 22);
  c.heads = d::int_in_range(j, "num_attention_heads", src, 1, kMaxDim, 12);
  check(c.hidden % c.heads == 0, src, ": field \"hidden_size\" = ", c.hidden,
        " is not a multiple of \"num_attention_heads\" = ", c.heads);
  c.head_dim = c.hidden / c.heads;
  check(c.head_dim % 2 == 0, src, ": head_dim (hidden_size / num_attention_heads) = ", c.head_dim,
        " must be even (rotary pairs)");
  c.intermediate = d::int_in_range(j, "intermediate_size", src, 1, kMaxDim, 1152);
  c.vocab = d::int_in_range(j, "vocab_size", src, 1, INT_MAX, 50368);
  c.max_positions = d::int_in_range(j, "max_position_embeddings", src, 1, kMaxDim, 8192);
  c.act = io::parse_activation(d::opt_string(j, "hidden_activation", src).value_or("gelu"), src);
  c.norm_eps = d::opt_positive_float(j, "norm_eps", src, 1e-5f);
  c.norm_bias = opt_bool(j, "norm_bias", src, false);
  c.attention_bias = opt_bool(j, "attention_bias", src, false);
  c.mlp_bias = opt_bool(j, "mlp_bias", src, false);
  c.local_attention = d::int_in_range(j, "local_attention", src, 1, kMaxDim, 128);
  // transformers 5's sliding_window is the half window, a view of local_attention whose setter
  // rewrites it (local_attention = 2 · sliding_window); a file that stores it means that.
  if (j.contains("sliding_window") && !j.at("sliding_window").is_null())
    c.local_attention = 2 * d::int_in_range(j, "sliding_window", src, 0, kMaxDim / 2);
  check(c.local_attention >= 1, src, ": field \"sliding_window\" = 0 leaves a sliding layer no keys");
  c.random_weights = opt_bool(j, "inferencelayer_random_weights", src, false);

  // Layer kinds: layer_types where present, else every global_attn_every_n_layers-th layer global
  // (layer 0 first). A file with both must agree: transformers' versions differ in which one
  // they obey.
  const int every_n = d::int_in_range(j, "global_attn_every_n_layers", src, 1, kMaxDim, 3);
  c.sliding.resize(static_cast<std::size_t>(c.layers));
  for (int i = 0; i < c.layers; ++i) c.sliding[static_cast<std::size_t>(i)] = i % every_n != 0;
  if (const auto it = j.find("layer_types"); it != j.end() && !it->is_null()) {
    check(it->is_array() && it->size() == static_cast<std::size_t>(c.layers), src,
          ": field \"layer_types\" must be an array of num_hidden_layers (", c.layers, ") strings, got ",
          d::describe(*it));
    std::vector<bool> kinds;
    for (const json& t : *it) {
      const bool full = t.is_string() && t.get<std::string>() == "full_attention";
      const bool sliding = t.is_string() && t.get<std::string>() == "sliding_attention";
      check(full || sliding, src, ": field \"layer_types\" holds ", d::describe(t),
            " (supported: full_attention, sliding_attention)");
      kinds.push_back(sliding);
    }
    if (j.contains("global_attn_every_n_layers"))
      check(kinds == c.sliding, src, ": fields \"layer_types\" and \"global_attn_every_n_layers\" = ", every_n,
            " disagree on which layers attend globally");
    c.sliding = kinds;
  }

  // Rope thetas: rope_parameters.{full_attention, sliding_attention}.rope_theta (transformers 5),
  // else global_rope_theta / local_rope_theta. rope_scaling is not supported.
  c.global_theta = d::opt_positive_float(j, "global_rope_theta", src, 160000.0f);
  c.local_theta = d::opt_positive_float(j, "local_rope_theta", src, 10000.0f);
  if (const auto it = j.find("rope_scaling"); it != j.end() && !it->is_null())
    throw make_error(src, ": field \"rope_scaling\" is not supported (scaled rotary embeddings)");
  if (const auto it = j.find("rope_parameters"); it != j.end() && !it->is_null()) {
    check(it->is_object(), src, ": field \"rope_parameters\" must be an object, got ", d::describe(*it));
    c.global_theta = read_layer_theta(*it, "full_attention", src, c.global_theta);
    c.local_theta = read_layer_theta(*it, "sliding_attention", src, c.local_theta);
  }

  // The classification head (read for every architecture, used by ModernBertForSequenceClassification).
  const std::string pooling = d::opt_string(j, "classifier_pooling", src).value_or("cls");
  check(pooling == "cls" || pooling == "mean", src, ": field \"classifier_pooling\" = \"", pooling,
        "\" is not supported (supported: cls, mean)");
  c.classifier_pooling = pooling == "mean" ? PoolingMode::kMean : PoolingMode::kCls;
  c.classifier_act = io::parse_activation(d::opt_string(j, "classifier_activation", src).value_or("gelu"), src);
  c.classifier_bias = opt_bool(j, "classifier_bias", src, false);
  ClassifierLabels labels = read_classifier_labels(j, src);
  c.num_labels = labels.num_labels;
  c.id2label = std::move(labels.id2label);
  return c;
}

}  // namespace il::models
