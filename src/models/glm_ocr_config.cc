#include "models/glm_ocr_config.h"

#include <climits>

#include "core/error.h"
#include "io/hf_config.h"
#include "io/json_util.h"

namespace il::models {
namespace {

using nlohmann::json;
namespace d = io::detail;

constexpr long long kMaxDim = 1LL << 24;

// rope_parameters: the default rotary embedding (no scaling), its theta, the partial rotary
// factor and the M-RoPE sections, which must cover the rotary half exactly.
void read_rope(const json& t, GlmOcrTextConfig& c, const std::string& src) {
  const json& r = d::req_object(t, "rope_parameters", src + " (text_config)");
  const std::string where = src + " (text_config.rope_parameters)";
  if (const auto type = d::opt_string(r, "rope_type", where))
    check(*type == "default", where, ": rope_type \"", *type, "\" is not supported (supported: default)");
  c.rope_theta = d::opt_positive_float(r, "rope_theta", where, 10000.0f);
  const auto factor = d::opt_number(r, "partial_rotary_factor", where).value_or(1.0);
  check(factor > 0.0 && factor <= 1.0, where, ": partial_rotary_factor ", factor, " outside (0, 1]");
  // transformers: dim = int(head_dim · factor).
  c.rotary_dim = static_cast<int>(static_cast<double>(c.head_dim) * factor);
  check(c.rotary_dim >= 2 && c.rotary_dim % 2 == 0, where, ": head_dim ", c.head_dim, " × partial_rotary_factor ",
        factor, " gives ", c.rotary_dim, " rotary columns (must be even and at least 2)");
  const auto it = r.find("mrope_section");
  if (it == r.end() || it->is_null()) {
    c.mrope_section = {8, 12, 12};  // GlmOcrTextRotaryEmbedding's default
  } else {
    check(it->is_array() && it->size() == 3, where, ": mrope_section must be an array of 3 integers, got ",
          d::describe(*it));
    for (std::size_t i = 0; i < 3; ++i) {
      check((*it)[i].is_number_integer() && (*it)[i].get<long long>() >= 0 && (*it)[i].get<long long>() <= 4096,
            where, ": mrope_section[", i, "] must be an integer in 0..4096, got ", d::describe((*it)[i]));
      c.mrope_section[i] = (*it)[i].get<int>();
    }
  }
  const int sum = c.mrope_section[0] + c.mrope_section[1] + c.mrope_section[2];
  check(sum == c.rotary_dim / 2, where, ": mrope_section sums to ", sum, " frequencies, but the rotary columns (",
        c.rotary_dim, ") hold ", c.rotary_dim / 2);
}

GlmOcrTextConfig parse_text(const json& t, const std::string& src) {
  const std::string where = src + " (text_config)";
  GlmOcrTextConfig c;
  c.vocab = d::int_in_range(t, "vocab_size", where, 1, INT_MAX);
  c.hidden = d::int_in_range(t, "hidden_size", where, 1, kMaxDim);
  c.layers = d::int_in_range(t, "num_hidden_layers", where, 1, 4096);
  c.heads = d::int_in_range(t, "num_attention_heads", where, 1, 4096);
  c.kv_heads = d::int_in_range(t, "num_key_value_heads", where, 1, 4096, c.heads);
  check(c.heads % c.kv_heads == 0, where, ": num_key_value_heads = ", c.kv_heads, " does not divide ",
        "num_attention_heads = ", c.heads);
  if (c.hidden % c.heads == 0)
    c.head_dim = d::int_in_range(t, "head_dim", where, 2, 256, c.hidden / c.heads);
  else
    c.head_dim = d::int_in_range(t, "head_dim", where, 2, 256);
  c.intermediate = d::int_in_range(t, "intermediate_size", where, 1, kMaxDim);
  c.max_positions = d::int_in_range(t, "max_position_embeddings", where, 1, 1 << 30, 131072);
  c.rms_eps = d::opt_positive_float(t, "rms_norm_eps", where, 1e-5f);
  c.act = io::parse_activation(d::opt_string(t, "hidden_act", where).value_or("silu"), where);
  check(c.act == Activation::kSilu, where, ": hidden_act must be silu (the fused gate-up MLP)");
  check(!d::opt_bool(t, "attention_bias", where).value_or(false), where,
        ": attention_bias = true is not supported (GLM-OCR's projections have no biases)");
  read_rope(t, c, src);
  return c;
}

}  // namespace

GlmOcrConfig parse_glm_ocr_config(const json& j, const std::string& src) {
  check(j.is_object(), src, ": expected a JSON object, got ", d::type_name(j));
  GlmOcrConfig c;
  c.model_type = d::req_string(j, "model_type", src);
  check(c.model_type == "glm_ocr", src, ": model_type \"", c.model_type, "\" is not glm_ocr");
  if (const auto it = j.find("architectures"); it != j.end() && !it->is_null()) {
    check(it->is_array() && !it->empty() && it->front().is_string(), src,
          ": field \"architectures\" must be an array of strings, got ", d::describe(*it));
    c.architecture = it->front().get<std::string>();
  }
  if (c.architecture.empty()) c.architecture = "GlmOcrForConditionalGeneration";
  check(c.architecture == "GlmOcrForConditionalGeneration", src, ": architecture \"", c.architecture,
        "\" is not supported for glm_ocr (supported: GlmOcrForConditionalGeneration)");
  c.text = parse_text(d::req_object(j, "text_config", src), src);
  c.vision = d::req_object(j, "vision_config", src);
  c.image_token_id = d::token_id_field(j, "image_token_id", src, 59280, c.text.vocab);
  c.image_start_token_id = d::token_id_field(j, "image_start_token_id", src, 59256, c.text.vocab);
  c.image_end_token_id = d::token_id_field(j, "image_end_token_id", src, 59257, c.text.vocab);
  c.video_token_id = d::token_id_field(j, "video_token_id", src, 59281, c.text.vocab);
  c.tie_word_embeddings = d::opt_bool(j, "tie_word_embeddings", src).value_or(false);
  c.random_weights = d::opt_bool(j, "inferencelayer_random_weights", src).value_or(false);
  return c;
}

}  // namespace il::models
