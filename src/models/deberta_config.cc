#include "models/deberta_config.h"

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

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string lower_trim(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "p2c|c2p" (split on '|', as transformers does) or ["p2c", "c2p"]; null or absent: none.
std::vector<std::string> read_string_list(const json& j, const char* key, const std::string& src) {
  std::vector<std::string> out;
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return out;
  if (it->is_string()) {
    const std::string s = it->get<std::string>();
    std::size_t pos = 0;
    while (true) {
      const std::size_t bar = s.find('|', pos);
      const std::string part = lower_trim(s.substr(pos, bar == std::string::npos ? std::string::npos : bar - pos));
      if (!part.empty()) out.push_back(part);
      if (bar == std::string::npos) break;
      pos = bar + 1;
    }
    return out;
  }
  check(it->is_array(), src, ": field \"", key, "\" must be a string or a list of strings, got ", d::describe(*it));
  for (const json& e : *it) {
    check(e.is_string(), src, ": field \"", key, "\" must be a string or a list of strings, got ", d::describe(*it));
    out.push_back(lower_trim(e.get<std::string>()));
  }
  return out;
}

Activation activation_field(const json& j, const char* key, const std::string& src, const char* fallback = "gelu") {
  const std::string name = d::opt_string(j, key, src).value_or(fallback);
  try {
    return io::parse_activation(name, src);
  } catch (const Error& e) {
    throw make_error(src, ": field \"", key, "\": ", e.what());
  }
}

}  // namespace

DebertaConfig parse_deberta_config(const json& j, const std::string& src) {
  check(j.is_object(), src, ": expected a JSON object, got ", d::type_name(j));
  DebertaConfig c;
  c.model_type = d::req_string(j, "model_type", src);
  check(c.model_type == "deberta-v2", src, ": model_type \"", c.model_type, "\" is not supported here (deberta-v2)");
  if (const auto it = j.find("architectures"); it != j.end() && !it->is_null()) {
    check(it->is_array(), src, ": field \"architectures\" must be an array of strings, got ", d::describe(*it));
    for (const json& a : *it) {
      check(a.is_string(), src, ": field \"architectures\" must be an array of strings, got ", d::describe(*it));
      c.architectures.push_back(a.get<std::string>());
    }
  }
  if (!c.architectures.empty()) {
    const std::string& a = c.architectures[0];
    check(a == "DebertaV2Model" || a == "DebertaV2ForSequenceClassification" || a == "DebertaV2ForMaskedLM", src,
          ": field \"architectures\" = \"", a,
          "\" is not supported (supported: DebertaV2Model, DebertaV2ForSequenceClassification, and "
          "DebertaV2ForMaskedLM as an encoder)");
    c.is_cross_encoder = ends_with(a, "ForSequenceClassification");
  }

  c.hidden = d::int_in_range(j, "hidden_size", src, 1, kMaxDim);
  c.layers = d::int_in_range(j, "num_hidden_layers", src, 1, kMaxDim);
  c.heads = d::int_in_range(j, "num_attention_heads", src, 1, kMaxDim);
  check(c.hidden % c.heads == 0, src, ": field \"num_attention_heads\" = ", c.heads, " does not divide \"hidden_size\" = ",
        c.hidden);
  c.head_dim = c.hidden / c.heads;
  if (const auto ahs = d::opt_int(j, "attention_head_size", src))
    check(*ahs == c.head_dim, src, ": field \"attention_head_size\" = ", *ahs,
          " is not supported (only hidden_size / num_attention_heads = ", c.head_dim, ")");
  c.intermediate = d::int_in_range(j, "intermediate_size", src, 1, kMaxDim);
  c.vocab = d::int_in_range(j, "vocab_size", src, 1, INT_MAX);
  c.type_vocab = d::int_in_range(j, "type_vocab_size", src, 0, kMaxDim, 0);
  c.max_positions = d::int_in_range(j, "max_position_embeddings", src, 1, kMaxDim, 512);
  c.embedding_size = d::int_in_range(j, "embedding_size", src, 1, kMaxDim, c.hidden);
  if (const auto conv = d::opt_int(j, "conv_kernel_size", src); conv && *conv > 0) {
    // transformers pads by (k − 1) / 2 on each side: an even kernel would shorten the sequence.
    check(*conv % 2 == 1 && *conv <= 63, src, ": field \"conv_kernel_size\" = ", *conv,
          " must be odd and at most 63 (the convolution keeps each sequence's length)");
    c.conv_taps = static_cast<int>(*conv);
    c.conv_groups = d::int_in_range(j, "conv_groups", src, 1, kMaxDim, 1);
    check(c.hidden % c.conv_groups == 0, src, ": field \"conv_groups\" = ", c.conv_groups,
          " does not divide \"hidden_size\" = ", c.hidden);
    c.conv_act = activation_field(j, "conv_act", src, "tanh");
  }
  c.position_biased_input = d::opt_bool(j, "position_biased_input", src).value_or(true);
  c.relative_attention = d::opt_bool(j, "relative_attention", src).value_or(false);
  c.share_att_key = d::opt_bool(j, "share_att_key", src).value_or(false);

  for (const std::string& t : read_string_list(j, "pos_att_type", src)) {
    if (t == "c2p") c.c2p = true;
    else if (t == "p2c") c.p2c = true;
    // DeBERTa's paper lists position-to-position too; transformers' DebertaV2 neither computes it
    // nor counts it in the scale, so a folder naming it gives transformers' numbers without it.
    else if (t == "p2p") c.p2p_listed = true;
    else
      throw make_error(src, ": field \"pos_att_type\" entry \"", t, "\" is not supported (supported: c2p, p2c, p2p)");
  }
  for (const std::string& t : read_string_list(j, "norm_rel_ebd", src)) {
    if (t == "layer_norm") c.norm_rel_ebd = true;
    else
      check(t == "none", src, ": field \"norm_rel_ebd\" entry \"", t, "\" is not supported (supported: layer_norm, none)");
  }
  if (c.relative_attention) {
    const long long mr = d::opt_int(j, "max_relative_positions", src).value_or(-1);
    check(mr <= kMaxDim, src, ": field \"max_relative_positions\" = ", mr, " is too large");
    c.max_relative = mr < 1 ? c.max_positions : static_cast<int>(mr);
    const long long pb = d::opt_int(j, "position_buckets", src).value_or(-1);
    check(pb <= kMaxDim, src, ": field \"position_buckets\" = ", pb, " is too large");
    c.position_buckets = pb > 0 ? static_cast<int>(pb) : -1;
    c.span = c.position_buckets > 0 ? c.position_buckets : c.max_relative;
    if (c.position_buckets > 0) {
      // The log bucket divides by ln((max_relative_positions - 1) / (position_buckets / 2)).
      check(c.position_buckets >= 2 && c.max_relative - 1 > c.position_buckets / 2, src,
            ": field \"position_buckets\" = ", c.position_buckets, " with max_relative_positions ", c.max_relative,
            " gives no log buckets (needs max_relative_positions - 1 > position_buckets / 2)");
    }
  }

  if (const auto eps = d::opt_number(j, "layer_norm_eps", src)) {
    const bool in_range = *eps > 0 && *eps <= std::numeric_limits<float>::max();
    const float f = in_range ? static_cast<float>(*eps) : 0.0f;
    check(f > 0, src, ": field \"layer_norm_eps\" = ", *eps, " must be a positive number");
    c.layer_norm_eps = f;
  }
  c.act = activation_field(j, "hidden_act", src);
  if (c.is_cross_encoder) {
    c.pooler_act = activation_field(j, "pooler_hidden_act", src);
    if (const auto ph = d::opt_int(j, "pooler_hidden_size", src))
      check(*ph == c.hidden, src, ": field \"pooler_hidden_size\" = ", *ph,
            " is not supported (the pooler reads hidden states of hidden_size = ", c.hidden, ")");
    ClassifierLabels labels = read_classifier_labels(j, src);
    c.num_labels = labels.num_labels;
    c.id2label = std::move(labels.id2label);
  }
  c.random_weights = d::opt_bool(j, "inferencelayer_random_weights", src).value_or(false);
  return c;
}

}  // namespace il::models
