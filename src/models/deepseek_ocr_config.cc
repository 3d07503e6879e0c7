#include "models/deepseek_ocr_config.h"

#include <climits>
#include <optional>

#include "core/error.h"
#include "io/hf_config.h"
#include "io/json_util.h"

namespace il::models {
namespace {

using nlohmann::json;
namespace d = io::detail;

constexpr long long kMaxDim = 1LL << 24;

// rope_parameters (transformers 5) or the older top-level rope_theta / rope_scaling: the default
// rotary embedding only, over whole heads (LlamaAttention's rotate-half).
void read_rope(const json& t, DeepseekTextConfig& c, const std::string& where) {
  if (const auto it = t.find("rope_parameters"); it != t.end() && !it->is_null()) {
    check(it->is_object(), where, ": rope_parameters must be an object, got ", d::describe(*it));
    const std::string w = where + ".rope_parameters";
    if (const auto type = d::opt_string(*it, "rope_type", w))
      check(*type == "default", w, ": rope_type \"", *type, "\" is not supported (supported: default)");
    c.rope_theta = d::opt_positive_float(*it, "rope_theta", w, 10000.0f);
    const double factor = d::opt_number(*it, "partial_rotary_factor", w).value_or(1.0);
    check(factor == 1.0, w, ": partial_rotary_factor ", factor, " is not supported (the decoder turns whole heads)");
    return;
  }
  if (const auto it = t.find("rope_scaling"); it != t.end())
    check(it->is_null(), where, ": rope_scaling ", d::describe(*it), " is not supported (default rope only)");
  c.rope_theta = d::opt_positive_float(t, "rope_theta", where, 10000.0f);
}

// Which layers carry the mixture of experts: mlp_layer_types (DeepSeek-OCR-2 in transformers),
// else first_k_dense_replace and moe_layer_freq (the original DeepSeek-V2 configs).
void read_layer_types(const json& t, DeepseekTextConfig& c, const std::string& where) {
  c.sparse.assign(static_cast<std::size_t>(c.layers), false);
  if (const auto it = t.find("mlp_layer_types"); it != t.end() && !it->is_null()) {
    check(it->is_array() && it->size() == static_cast<std::size_t>(c.layers), where,
          ": mlp_layer_types must be an array of num_hidden_layers = ", c.layers, " strings, got ", d::describe(*it));
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& v = (*it)[i];
      check(v.is_string() && (v == "dense" || v == "sparse"), where, ": mlp_layer_types[", i,
            "] must be \"dense\" or \"sparse\", got ", d::describe(v));
      c.sparse[i] = v == "sparse";
    }
    return;
  }
  const int first_dense = d::int_in_range(t, "first_k_dense_replace", where, 0, c.layers, 0);
  const int freq = d::int_in_range(t, "moe_layer_freq", where, 1, 1 << 20, 1);
  for (int i = 0; i < c.layers; ++i) c.sparse[static_cast<std::size_t>(i)] = i >= first_dense && i % freq == 0;
}

std::vector<int> int_list(const json& j, const char* key, const std::string& where, std::vector<int> fallback,
                          int lo, int hi) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  check(it->is_array(), where, ": field \"", key, "\" must be an array of integers, got ", d::describe(*it));
  std::vector<int> out;
  for (const json& v : *it) {
    check(v.is_number_integer() && v.get<long long>() >= lo && v.get<long long>() <= hi, where, ": field \"", key,
          "\" holds ", d::describe(v), " (integers in ", lo, "..", hi, " expected)");
    out.push_back(v.get<int>());
  }
  return out;
}

SamConfig parse_sam(const json& s, const std::string& where) {
  check(s.is_object(), where, ": expected a JSON object, got ", d::type_name(s));
  SamConfig c;
  c.hidden = d::int_in_range(s, "hidden_size", where, 1, kMaxDim, 768);
  c.layers = d::int_in_range(s, "num_hidden_layers", where, 1, 1024, 12);
  c.heads = d::int_in_range(s, "num_attention_heads", where, 1, 1024, 12);
  check(c.hidden % c.heads == 0, where, ": hidden_size ", c.hidden, " is not a multiple of num_attention_heads ", c.heads);
  c.head_dim = c.hidden / c.heads;
  const double ratio = d::opt_number(s, "mlp_ratio", where).value_or(4.0);
  c.mlp_dim = d::int_in_range(s, "mlp_dim", where, 1, kMaxDim, static_cast<int>(c.hidden * ratio));
  c.image_size = d::int_in_range(s, "image_size", where, 1, 1 << 16, 1024);
  c.patch = d::int_in_range(s, "patch_size", where, 1, 1024, 16);
  check(c.image_size % c.patch == 0, where, ": image_size ", c.image_size, " is not a multiple of patch_size ", c.patch);
  c.window = d::int_in_range(s, "window_size", where, 1, 1024, 14);
  c.global_layers = int_list(s, "global_attn_indexes", where, {2, 5, 8, 11}, 0, c.layers - 1);
  c.neck_channels = d::int_in_range(s, "output_channels", where, 1, kMaxDim, 256);
  const std::vector<int> down = int_list(s, "downsample_channels", where, {512, 896}, 1, 1 << 20);
  check(down.size() == 2, where, ": downsample_channels must hold 2 widths, got ", down.size());
  c.downsample = {down[0], down[1]};
  c.eps = d::opt_positive_float(s, "layer_norm_eps", where, 1e-6f);
  const std::string act = d::opt_string(s, "hidden_act", where).value_or("gelu");
  check(act == "gelu", where, ": hidden_act \"", act, "\" is not supported (SAM's MLP: exact gelu)");
  for (const char* key : {"use_abs_pos", "use_rel_pos", "qkv_bias"})
    check(d::opt_bool(s, key, where).value_or(true), where, ": ", key, " = false is not supported");
  check(d::int_in_range(s, "num_channels", where, 1, 16, 3) == 3, where, ": num_channels must be 3");
  return c;
}

QueryEncoderConfig parse_query_encoder(const json& e, const std::string& where) {
  check(e.is_object(), where, ": expected a JSON object, got ", d::type_name(e));
  QueryEncoderConfig c;
  c.hidden = d::int_in_range(e, "hidden_size", where, 1, kMaxDim, 896);
  c.layers = d::int_in_range(e, "num_hidden_layers", where, 1, 1024, 24);
  c.heads = d::int_in_range(e, "num_attention_heads", where, 1, 1024, 14);
  c.kv_heads = d::int_in_range(e, "num_key_value_heads", where, 1, 1024, c.heads);
  check(c.hidden % c.heads == 0 && c.heads % c.kv_heads == 0, where, ": hidden_size ", c.hidden,
        ", num_attention_heads ", c.heads, " and num_key_value_heads ", c.kv_heads, " do not divide");
  c.head_dim = c.hidden / c.heads;
  c.intermediate = d::int_in_range(e, "intermediate_size", where, 1, kMaxDim, 4864);
  c.rms_eps = d::opt_positive_float(e, "rms_norm_eps", where, 1e-6f);
  const Activation act = io::parse_activation(d::opt_string(e, "hidden_act", where).value_or("silu"), where);
  check(act == Activation::kSilu, where, ": hidden_act must be silu");
  check(!d::opt_bool(e, "use_sliding_window", where).value_or(false), where,
        ": use_sliding_window = true is not supported (the released encoder attends over whole views)");
  DeepseekTextConfig rope;
  read_rope(e, rope, where);
  c.rope_theta = rope.rope_theta;
  return c;
}

// v1's SAM (vision_config.width.sam_vit_b): the original config names width, layers, heads,
// global_attn_indexes and downsample_channels; the rest is the reference code's constants
// (build_sam_vit_b), which a config may override for other geometries (the tiny fixtures).
SamConfig parse_v1_sam(const json& s, int image_size, const std::string& where) {
  check(s.is_object(), where, ": expected a JSON object, got ", d::type_name(s));
  SamConfig c;
  c.hidden = d::int_in_range(s, "width", where, 1, kMaxDim, 768);
  c.layers = d::int_in_range(s, "layers", where, 1, 1024, 12);
  c.heads = d::int_in_range(s, "heads", where, 1, 1024, 12);
  check(c.hidden % c.heads == 0, where, ": width ", c.hidden, " is not a multiple of heads ", c.heads);
  c.head_dim = c.hidden / c.heads;
  c.mlp_dim = d::int_in_range(s, "mlp_dim", where, 1, kMaxDim, 4 * c.hidden);
  c.image_size = d::int_in_range(s, "image_size", where, 1, 1 << 16, image_size);
  c.patch = d::int_in_range(s, "patch_size", where, 1, 1024, 16);
  check(c.image_size % c.patch == 0, where, ": image_size ", c.image_size, " is not a multiple of patch_size ", c.patch);
  c.window = d::int_in_range(s, "window_size", where, 1, 1024, 14);
  c.global_layers = int_list(s, "global_attn_indexes", where, {2, 5, 8, 11}, 0, c.layers - 1);
  c.neck_channels = d::int_in_range(s, "out_chans", where, 1, kMaxDim, 256);
  const std::vector<int> down = int_list(s, "downsample_channels", where, {512, 1024}, 1, 1 << 20);
  check(down.size() == 2, where, ": downsample_channels must hold 2 widths, got ", down.size());
  c.downsample = {down[0], down[1]};
  c.eps = d::opt_positive_float(s, "layer_norm_eps", where, 1e-6f);
  return c;
}

ClipTowerConfig parse_v1_clip(const json& s, const std::string& where) {
  check(s.is_object(), where, ": expected a JSON object, got ", d::type_name(s));
  ClipTowerConfig c;
  c.hidden = d::int_in_range(s, "width", where, 1, kMaxDim, 1024);
  c.layers = d::int_in_range(s, "layers", where, 1, 1024, 24);
  c.heads = d::int_in_range(s, "heads", where, 1, 1024, 16);
  check(c.hidden % c.heads == 0, where, ": width ", c.hidden, " is not a multiple of heads ", c.heads);
  c.head_dim = c.hidden / c.heads;
  c.intermediate = d::int_in_range(s, "intermediate_size", where, 1, kMaxDim, 4 * c.hidden);
  const int image = d::int_in_range(s, "image_size", where, 1, 1 << 16, 224);
  const int patch = d::int_in_range(s, "patch_size", where, 1, 1024, 14);
  check(image % patch == 0, where, ": image_size ", image, " is not a multiple of patch_size ", patch);
  c.grid = image / patch;
  c.eps = d::opt_positive_float(s, "layer_norm_eps", where, 1e-5f);
  const std::string act = d::opt_string(s, "hidden_act", where).value_or("quick_gelu");
  check(act == "quick_gelu", where, ": hidden_act \"", act, "\" is not supported (DeepEncoder's CLIP: quick_gelu)");
  return c;
}

DeepseekOcrConfig parse_v1(const json& j, const std::string& src, DeepseekOcrConfig c) {
  if (c.architecture.empty()) c.architecture = "DeepseekOCRForCausalLM";
  check(c.architecture == "DeepseekOCRForCausalLM", src, ": architecture \"", c.architecture,
        "\" is not supported for deepseek_vl_v2 (supported: DeepseekOCRForCausalLM, DeepSeek-OCR)");
  c.version = 1;
  // The decoder's fields: language_config (the original folder also repeats them at the top).
  const auto lang = j.find("language_config");
  const bool nested = lang != j.end() && lang->is_object();
  c.text = parse_deepseek_text_config(nested ? *lang : j, src + (nested ? " (language_config)" : ""));
  c.vision = d::req_object(j, "vision_config", src);
  const std::string vw = src + " (vision_config.width)";
  const json& width = d::req_object(c.vision, "width", src + " (vision_config)");
  const int image_size = d::int_in_range(c.vision, "image_size", src + " (vision_config)", 1, 1 << 16, 1024);
  c.sam = parse_v1_sam(d::req_object(width, "sam_vit_b", vw), image_size, vw + " sam_vit_b");
  c.clip = parse_v1_clip(d::req_object(width, "clip-l-14-224", vw), vw + " clip-l-14-224");
  check(c.sam.downsample[1] == c.clip.hidden, src, ": sam_vit_b downsample_channels[1] (", c.sam.downsample[1],
        ") must equal the CLIP width (", c.clip.hidden, "): SAM's output rows are CLIP's tokens");
  const json& proj = d::req_object(j, "projector_config", src);
  const std::string pw = src + " (projector_config)";
  const std::string type = d::opt_string(proj, "projector_type", pw).value_or("linear");
  check(type == "linear", pw, ": projector_type \"", type, "\" is not supported (DeepSeek-OCR's: linear)");
  const int in = d::int_in_range(proj, "input_dim", pw, 1, kMaxDim, 2 * c.clip.hidden);
  check(in == c.clip.hidden + c.sam.downsample[1], pw, ": input_dim ", in, " must be the CLIP width plus SAM's (",
        c.clip.hidden + c.sam.downsample[1], "): the projector reads both side by side");
  const int out = d::int_in_range(proj, "n_embed", pw, 1, kMaxDim, c.text.hidden);
  check(out == c.text.hidden, pw, ": n_embed ", out, " must be the decoder's hidden_size ", c.text.hidden);
  if (const auto tag = d::opt_string(j, "tile_tag", src))
    check(*tag == "2D", src, ": tile_tag \"", *tag, "\" is not supported (supported: 2D)");
  if (const auto pos = d::opt_string(j, "global_view_pos", src))
    check(*pos == "head", src, ": global_view_pos \"", *pos, "\" is not supported (supported: head)");
  c.image_token_id = d::token_id_field(j, "image_token_id", src, 128815, c.text.vocab);
  c.tie_word_embeddings = d::opt_bool(j, "tie_word_embeddings", src).value_or(false);
  c.random_weights = d::opt_bool(j, "inferencelayer_random_weights", src).value_or(false);
  return c;
}

}  // namespace

bool SamConfig::is_global(int layer) const {
  for (int g : global_layers)
    if (g == layer) return true;
  return false;
}

DeepseekTextConfig parse_deepseek_text_config(const json& t, const std::string& where) {
  check(t.is_object(), where, ": expected a JSON object, got ", d::type_name(t));
  DeepseekTextConfig c;
  c.vocab = d::int_in_range(t, "vocab_size", where, 1, INT_MAX);
  c.hidden = d::int_in_range(t, "hidden_size", where, 1, kMaxDim);
  c.layers = d::int_in_range(t, "num_hidden_layers", where, 1, 4096);
  c.heads = d::int_in_range(t, "num_attention_heads", where, 1, 4096);
  c.kv_heads = d::int_in_range(t, "num_key_value_heads", where, 1, 4096, c.heads);
  check(c.heads % c.kv_heads == 0, where, ": num_key_value_heads = ", c.kv_heads, " does not divide ",
        "num_attention_heads = ", c.heads);
  check(c.hidden % c.heads == 0, where, ": hidden_size ", c.hidden, " is not a multiple of num_attention_heads ",
        c.heads, " (transformers' DeepseekOcr2TextConfig requires it)");
  // DeepseekOcr2TextConfig sets head_dim = hidden_size / num_attention_heads, whatever the file says.
  c.head_dim = c.hidden / c.heads;
  check(c.head_dim % 2 == 0 && c.head_dim <= 256, where, ": head dimension ", c.head_dim,
        " must be even and at most 256");
  // Multi-head latent attention: v1 configs carry its fields, unset, next to use_mla = false; a
  // config without use_mla that sets a LoRA rank asks for it.
  const std::optional<bool> mla = d::opt_bool(t, "use_mla", where);
  check(!mla.value_or(false), where,
        ": use_mla = true (multi-head latent attention) is not supported: DeepSeek-OCR's decoder uses plain "
        "multi-head attention");
  if (!mla.has_value())
    for (const char* key : {"q_lora_rank", "kv_lora_rank"})
      if (const auto it = t.find(key); it != t.end())
        check(it->is_null(), where, ": field \"", key, "\" = ", d::describe(*it),
              " asks for multi-head latent attention, which is not supported");
  c.intermediate = d::int_in_range(t, "intermediate_size", where, 1, kMaxDim);
  c.moe_intermediate = d::int_in_range(t, "moe_intermediate_size", where, 1, kMaxDim, 1407);
  c.experts = d::int_in_range(t, "n_routed_experts", where, 1, 1024, 64);
  c.shared_experts = d::int_in_range(t, "n_shared_experts", where, 0, 1024, 2);
  c.top_k = d::int_in_range(t, "num_experts_per_tok", where, 1, c.experts);
  c.routed_scaling_factor = static_cast<float>(d::opt_number(t, "routed_scaling_factor", where).value_or(1.0));
  check(c.routed_scaling_factor > 0.0f, where, ": routed_scaling_factor must be positive");
  const std::string method = d::opt_string(t, "topk_method", where).value_or("greedy");
  check(method == "greedy", where, ": topk_method \"", method, "\" is not supported (supported: greedy)");
  if (const auto scoring = d::opt_string(t, "scoring_func", where))
    check(*scoring == "softmax", where, ": scoring_func \"", *scoring, "\" is not supported (supported: softmax)");
  // transformers' DeepseekV2Moe never renormalises the top-k weights; a v1 config saying it does
  // would be read differently by the original code, so refuse it rather than guess.
  check(!d::opt_bool(t, "norm_topk_prob", where).value_or(false), where,
        ": norm_topk_prob = true is not supported (DeepSeek-OCR's router keeps the softmax probabilities)");
  c.max_positions = d::int_in_range(t, "max_position_embeddings", where, 1, 1 << 30, 2048);
  c.rms_eps = d::opt_positive_float(t, "rms_norm_eps", where, 1e-6f);
  const Activation act = io::parse_activation(d::opt_string(t, "hidden_act", where).value_or("silu"), where);
  check(act == Activation::kSilu, where, ": hidden_act must be silu (the gated MLPs)");
  c.attention_bias = d::opt_bool(t, "attention_bias", where).value_or(false);
  c.mlp_bias = d::opt_bool(t, "mlp_bias", where).value_or(false);
  check(!c.mlp_bias, where, ": mlp_bias = true is not supported (the experts carry no biases)");
  read_rope(t, c, where);
  read_layer_types(t, c, where);
  return c;
}

DeepseekOcrConfig parse_deepseek_ocr_config(const json& j, const std::string& src) {
  check(j.is_object(), src, ": expected a JSON object, got ", d::type_name(j));
  DeepseekOcrConfig c;
  c.model_type = d::req_string(j, "model_type", src);
  check(c.model_type == "deepseek_ocr2" || c.model_type == "deepseek_vl_v2", src, ": model_type \"", c.model_type,
        "\" is not deepseek_ocr2 (DeepSeek-OCR-2) or deepseek_vl_v2 (DeepSeek-OCR)");
  if (const auto it = j.find("architectures"); it != j.end() && !it->is_null()) {
    check(it->is_array() && !it->empty() && it->front().is_string(), src,
          ": field \"architectures\" must be an array of strings, got ", d::describe(*it));
    c.architecture = it->front().get<std::string>();
  }
  if (c.model_type == "deepseek_vl_v2") return parse_v1(j, src, std::move(c));
  if (c.architecture.empty()) c.architecture = "DeepseekOcr2ForConditionalGeneration";
  check(c.architecture == "DeepseekOcr2ForConditionalGeneration", src, ": architecture \"", c.architecture,
        "\" is not supported for deepseek_ocr2 (supported: DeepseekOcr2ForConditionalGeneration)");
  c.version = 2;
  c.text = parse_deepseek_text_config(d::req_object(j, "text_config", src), src + " (text_config)");
  c.vision = d::req_object(j, "vision_config", src);
  c.sam = parse_sam(d::req_object(c.vision, "sam_config", src + " (vision_config)"), src + " (vision_config.sam_config)");
  c.encoder = parse_query_encoder(d::req_object(c.vision, "encoder_config", src + " (vision_config)"),
                                  src + " (vision_config.encoder_config)");
  check(c.sam.downsample[1] == c.encoder.hidden, src, ": vision_config.sam_config.downsample_channels[1] (",
        c.sam.downsample[1], ") must equal vision_config.encoder_config.hidden_size (", c.encoder.hidden,
        "): SAM's output rows are the encoder's tokens");
  c.image_token_id = d::token_id_field(j, "image_token_id", src, 128815, c.text.vocab);
  c.tie_word_embeddings = d::opt_bool(j, "tie_word_embeddings", src).value_or(false);
  c.random_weights = d::opt_bool(j, "inferencelayer_random_weights", src).value_or(false);
  return c;
}

}  // namespace il::models
