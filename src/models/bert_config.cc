#include "models/bert_config.h"

#include <charconv>
#include <climits>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/error.h"
#include "io/hf_config.h"
#include "io/json_util.h"
#include "models/classifier_labels.h"

namespace il::models {

using io::detail::int_in_range;
using nlohmann::json;
namespace detail = io::detail;

namespace {

// Upper bound for sizes read from config.json: large enough for any real model, small enough
// that products such as vocab × hidden stay far from overflowing a 64-bit size.
constexpr long long kMaxDim = 1LL << 24;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::vector<std::string> read_architectures(const json& j, const std::string& src) {
  std::vector<std::string> out;
  auto it = j.find("architectures");
  if (it == j.end() || it->is_null()) return out;
  check(it->is_array(), src, ": field \"architectures\" must be an array of strings, got ", detail::describe(*it));
  for (const json& a : *it) {
    check(a.is_string(), src, ": field \"architectures\" must be an array of strings, got ", detail::describe(*it));
    out.push_back(a.get<std::string>());
  }
  return out;
}

}  // namespace

BertConfig parse_bert_config(const json& j, const std::string& source_name) {
  const std::string& src = source_name;
  check(j.is_object(), src, ": expected a JSON object, got ", detail::type_name(j));
  try {
    BertConfig c;
    c.model_type = detail::req_string(j, "model_type", src);
    const bool roberta = c.model_type == "roberta" || c.model_type == "xlm-roberta";
    if (c.model_type == "bert") {
      c.flavor = BertFlavor::kBert;
    } else if (roberta) {
      c.flavor = BertFlavor::kXlmRoberta;
    } else {
      throw make_error(src, ": model_type \"", c.model_type,
                       "\" is not supported (supported: bert, roberta, xlm-roberta)");
    }
    c.architectures = read_architectures(j, src);

    c.hidden = int_in_range(j, "hidden_size", src, 1, kMaxDim);
    c.layers = int_in_range(j, "num_hidden_layers", src, 1, kMaxDim);
    c.heads = int_in_range(j, "num_attention_heads", src, 1, kMaxDim);
    check(c.hidden % c.heads == 0, src, ": field \"num_attention_heads\" = ", c.heads,
          " does not divide \"hidden_size\" = ", c.hidden);
    c.head_dim = c.hidden / c.heads;
    c.intermediate = int_in_range(j, "intermediate_size", src, 1, kMaxDim);
    c.vocab = int_in_range(j, "vocab_size", src, 1, INT_MAX);
    c.type_vocab = int_in_range(j, "type_vocab_size", src, 0, kMaxDim, roberta ? 1 : 2);
    c.max_positions = int_in_range(j, "max_position_embeddings", src, 1, kMaxDim);
    // BERT never reads pad_token_id; (XLM-)RoBERTa derives the position offset from it.
    c.pad_token_id = int_in_range(j, "pad_token_id", src, roberta ? 0 : INT_MIN, INT_MAX - 1, roberta ? 1 : 0);
    if (roberta) {
      c.position_offset = c.pad_token_id + 1;
      check(c.max_positions > c.position_offset, src, ": field \"max_position_embeddings\" = ", c.max_positions,
            " leaves no usable position after the offset pad_token_id + 1 = ", c.position_offset);
    }

    if (auto eps = detail::opt_number(j, "layer_norm_eps", src)) {
      // Range-checked before the cast, and checked again as float since 1e-300 rounds to 0.
      const bool in_range = *eps > 0 && *eps <= std::numeric_limits<float>::max();
      const float f = in_range ? static_cast<float>(*eps) : 0.0f;
      check(f > 0, src, ": field \"layer_norm_eps\" = ", *eps, " must be a positive number");
      c.layer_norm_eps = f;
    }
    c.act = io::parse_activation(detail::opt_string(j, "hidden_act", src).value_or("gelu"), src);

    if (auto pe = detail::opt_string(j, "position_embedding_type", src)) {
      check(*pe == "absolute", src, ": field \"position_embedding_type\" = \"", *pe,
            "\" is not supported (supported: absolute)");
    }

    c.is_cross_encoder = !c.architectures.empty() && ends_with(c.architectures[0], "ForSequenceClassification");
    // Only a classifier reports labels; an embedding model's leftover id2label is not its concern.
    if (c.is_cross_encoder) {
      ClassifierLabels labels = read_classifier_labels(j, src);
      c.num_labels = labels.num_labels;
      c.id2label = std::move(labels.id2label);
    } else {
      c.num_labels = read_num_labels(j, src);
    }
    c.random_weights = detail::opt_bool(j, "inferencelayer_random_weights", src).value_or(false);
    return c;
  } catch (const json::exception& e) {  // defensive: accessors check types, so this is not expected
    throw make_error(src, ": ", e.what());
  }
}

BertConfig load_bert_config(const std::filesystem::path& model_dir) {
  std::error_code ec;
  const auto path = std::filesystem::is_directory(model_dir, ec) ? model_dir / "config.json" : model_dir;
  return parse_bert_config(detail::read_json_file(path), path.string());
}

}  // namespace il::models
