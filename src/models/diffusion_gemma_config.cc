#include "models/diffusion_gemma_config.h"

#include <climits>
#include <cmath>

#include "core/error.h"
#include "io/hf_config.h"
#include "io/json_util.h"
#include "models/generation_config.h"

namespace il::models {
namespace {

using nlohmann::json;
namespace d = io::detail;

constexpr long long kMaxDim = 1LL << 24;

// layer_types, or transformers' default (every 6th layer full); the last layer is always full.
std::vector<bool> sliding_layers(const json& t, int layers, const std::string& where) {
  std::vector<bool> sliding(static_cast<std::size_t>(layers));
  const auto it = t.find("layer_types");
  if (it == t.end() || it->is_null()) {
    for (int i = 0; i < layers; ++i) sliding[static_cast<std::size_t>(i)] = (i + 1) % 6 != 0;
  } else {
    check(it->is_array() && it->size() == static_cast<std::size_t>(layers), where,
          ": layer_types must be an array of num_hidden_layers (", layers, ") strings, got ", d::describe(*it));
    for (int i = 0; i < layers; ++i) {
      const json& v = (*it)[static_cast<std::size_t>(i)];
      check(v.is_string() && (v == "sliding_attention" || v == "full_attention"), where, ": layer_types[", i,
            "] must be \"sliding_attention\" or \"full_attention\", got ", d::describe(v));
      sliding[static_cast<std::size_t>(i)] = v == "sliding_attention";
    }
  }
  sliding.back() = false;  // DiffusionGemmaTextConfig forces the last layer to full attention
  return sliding;
}

void read_rope(const json& t, DiffusionGemmaConfig& c, const std::string& where) {
  const auto it = t.find("rope_parameters");
  if (it == t.end() || it->is_null()) return;  // the defaults
  check(it->is_object(), where, ": rope_parameters must be an object, got ", d::describe(*it));
  if (const auto s = it->find("sliding_attention"); s != it->end()) {
    const std::string w = where + " (rope_parameters.sliding_attention)";
    check(s->is_object(), w, ": must be an object");
    const std::string type = d::opt_string(*s, "rope_type", w).value_or("default");
    check(type == "default", w, ": rope_type \"", type, "\" is not supported (supported: default)");
    c.sliding_theta = d::opt_positive_float(*s, "rope_theta", w, c.sliding_theta);
  }
  if (const auto f = it->find("full_attention"); f != it->end()) {
    const std::string w = where + " (rope_parameters.full_attention)";
    check(f->is_object(), w, ": must be an object");
    const std::string type = d::opt_string(*f, "rope_type", w).value_or("proportional");
    check(type == "proportional", w, ": rope_type \"", type, "\" is not supported (supported: proportional)");
    c.full_theta = d::opt_positive_float(*f, "rope_theta", w, c.full_theta);
    const double factor = d::opt_number(*f, "partial_rotary_factor", w).value_or(0.25);
    check(factor > 0.0 && factor <= 1.0, w, ": partial_rotary_factor ", factor, " outside (0, 1]");
    c.partial_rotary_factor = static_cast<float>(factor);
  }
}

// The full layers' geometry: per_layer_config entries (what transformers 5.17 writes: string
// layer indices, full layers only) or global_head_dim / num_global_key_value_heads.
void read_geometry(const json& t, DiffusionGemmaConfig& c, int head_dim, int kv_heads, const std::string& where) {
  const std::vector<bool> sliding = sliding_layers(t, c.layers, where);
  const int global_hd = d::int_in_range(t, "global_head_dim", where, 2, 1024, 512);
  const int global_kv = d::int_in_range(t, "num_global_key_value_heads", where, 1, 4096, kv_heads);
  const json* per_layer = nullptr;
  if (const auto it = t.find("per_layer_config"); it != t.end() && !it->is_null()) {
    check(it->is_object(), where, ": per_layer_config must be an object, got ", d::describe(*it));
    per_layer = &*it;
  }
  for (int i = 0; i < c.layers; ++i) {
    DiffusionGemmaLayer l;
    l.sliding = sliding[static_cast<std::size_t>(i)];
    l.head_dim = l.sliding ? head_dim : global_hd;
    l.kv_heads = l.sliding ? kv_heads : global_kv;
    if (per_layer) {
      if (const auto e = per_layer->find(std::to_string(i)); e != per_layer->end()) {
        const std::string w = where + " (per_layer_config." + std::to_string(i) + ")";
        check(e->is_object(), w, ": must be an object, got ", d::describe(*e));
        l.head_dim = d::int_in_range(*e, "head_dim", w, 2, 1024, l.head_dim);
        l.kv_heads = d::int_in_range(*e, "num_key_value_heads", w, 1, 4096, l.kv_heads);
      }
    }
    check(l.head_dim % 2 == 0, where, ": layer ", i, " head_dim ", l.head_dim, " must be even (rotate-half rope)");
    check(c.heads % l.kv_heads == 0, where, ": layer ", i, " has ", l.kv_heads, " key / value heads, which do not divide ",
          c.heads, " attention heads");
    c.layer.push_back(l);
  }
}

}  // namespace

DiffusionGemmaConfig parse_diffusion_gemma_config(const json& j, const std::string& src) {
  check(j.is_object(), src, ": expected a JSON object, got ", d::type_name(j));
  DiffusionGemmaConfig c;
  c.model_type = d::req_string(j, "model_type", src);
  check(c.model_type == "diffusion_gemma", src, ": model_type \"", c.model_type, "\" is not diffusion_gemma");
  if (const auto it = j.find("architectures"); it != j.end() && !it->is_null()) {
    check(it->is_array() && !it->empty() && it->front().is_string(), src,
          ": field \"architectures\" must be an array of strings, got ", d::describe(*it));
    c.architecture = it->front().get<std::string>();
  }
  if (c.architecture.empty()) c.architecture = "DiffusionGemmaForBlockDiffusion";
  check(c.architecture == "DiffusionGemmaForBlockDiffusion", src, ": architecture \"", c.architecture,
        "\" is not supported for diffusion_gemma (supported: DiffusionGemmaForBlockDiffusion)");
  c.canvas_length = d::int_in_range(j, "canvas_length", src, 1, 4096, 256);
  check(d::opt_bool(j, "tie_word_embeddings", src).value_or(true), src,
        ": tie_word_embeddings = false is not supported (the LM head and self-conditioning read the embedding)");
  c.random_weights = d::opt_bool(j, "inferencelayer_random_weights", src).value_or(false);

  const json& t = d::req_object(j, "text_config", src);
  const std::string where = src + " (text_config)";
  c.vocab = d::int_in_range(t, "vocab_size", where, 1, INT_MAX, 262144);
  c.hidden = d::int_in_range(t, "hidden_size", where, 1, kMaxDim, 2304);
  c.intermediate = d::int_in_range(t, "intermediate_size", where, 1, kMaxDim, 9216);
  c.layers = d::int_in_range(t, "num_hidden_layers", where, 1, 4096, 30);
  c.heads = d::int_in_range(t, "num_attention_heads", where, 1, 4096, 8);
  const int kv_heads = d::int_in_range(t, "num_key_value_heads", where, 1, 4096, 4);
  const int head_dim = d::int_in_range(t, "head_dim", where, 2, 1024, 256);
  c.experts = d::int_in_range(t, "num_experts", where, 1, 4096);
  c.top_k = d::int_in_range(t, "top_k_experts", where, 1, c.experts);
  c.moe_intermediate = d::int_in_range(t, "moe_intermediate_size", where, 1, kMaxDim);
  c.max_positions = d::int_in_range(t, "max_position_embeddings", where, 1, 1 << 30, 131072);
  c.sliding_window = d::int_in_range(t, "sliding_window", where, 2, 1 << 30, 512);
  c.rms_eps = d::opt_positive_float(t, "rms_norm_eps", where, 1e-6f);
  if (const auto v = d::opt_number(t, "final_logit_softcapping", where)) {
    check(*v > 0.0, where, ": final_logit_softcapping ", *v, " must be positive (null: the default 30)");
    c.softcap = static_cast<float>(*v);
  }
  const std::string act = d::opt_string(t, "hidden_activation", where).value_or("gelu_pytorch_tanh");
  check(act == "gelu_pytorch_tanh", where, ": hidden_activation \"", act,
        "\" is not supported (supported: gelu_pytorch_tanh)");
  check(!d::opt_bool(t, "attention_bias", where).value_or(false), where,
        ": attention_bias = true is not supported (DiffusionGemma's projections have no biases)");
  if (const auto mode = d::opt_string(t, "use_bidirectional_attention", where))
    check(*mode == "vision", where, ": use_bidirectional_attention \"", *mode,
          "\" is not supported (supported: \"vision\" or null: a causal encoder over text)");
  check(d::opt_bool(t, "tie_word_embeddings", where).value_or(true), where,
        ": tie_word_embeddings = false is not supported");
  read_rope(t, c, where);
  read_geometry(t, c, head_dim, kv_heads, where);
  return c;
}

void check_diffusion_settings(const DiffusionSettings& s, const std::string& src) {
  check(s.max_new_tokens > 0, src, ": max_new_tokens must be positive, got ", s.max_new_tokens);
  check(!s.max_length || *s.max_length > 0, src, ": max_length must be positive, got ", s.max_length.value_or(0));
  check(s.max_denoising_steps > 0, src, ": max_denoising_steps must be positive, got ", s.max_denoising_steps);
  check(s.t_min.has_value() == s.t_max.has_value(), src, ": t_min and t_max go together (both or neither)");
  if (s.t_min)
    check(*s.t_min >= 0.0f && *s.t_min < *s.t_max && std::isfinite(*s.t_max), src, ": the temperatures need 0 ≤ t_min < t_max, got t_min ",
          *s.t_min, ", t_max ", *s.t_max);
  check(s.entropy_bound > 0.0f && std::isfinite(s.entropy_bound), src, ": entropy_bound must be positive, got ",
        s.entropy_bound);
  check(s.stability_threshold >= 0, src, ": stability_threshold must be ≥ 0, got ", s.stability_threshold);
  if (s.confidence_threshold)
    check(*s.confidence_threshold > 0.0f, src, ": confidence_threshold must be positive, got ",
          *s.confidence_threshold);
}

DiffusionSettings read_diffusion_settings(const std::filesystem::path& dir, int vocab) {
  DiffusionSettings s;
  const GenerationDefaults ids = read_generation_config(dir, vocab);
  s.end_ids = ids.end_ids;
  s.pad_id = ids.pad_id;
  const std::filesystem::path file = dir / "generation_config.json";
  if (!std::filesystem::exists(file)) return s;
  const json j = io::read_json_file(file);
  const std::string src = file.string();
  s.max_new_tokens = d::int_in_range(j, "max_new_tokens", src, 1, INT_MAX, s.max_new_tokens);
  s.max_denoising_steps = d::int_in_range(j, "max_denoising_steps", src, 1, 1 << 20, s.max_denoising_steps);
  if (const auto it = j.find("max_length"); it != j.end() && !it->is_null())
    s.max_length = d::int_in_range(j, "max_length", src, 1, INT_MAX, 1);
  const auto number = [&](const char* key, std::optional<float> fallback) -> std::optional<float> {
    const auto it = j.find(key);
    if (it == j.end()) return fallback;
    if (it->is_null()) return std::nullopt;
    check(it->is_number(), src, ": field \"", key, "\" must be a number or null, got ", d::describe(*it));
    return it->get<float>();
  };
  const auto wide = [&](const char* key, std::optional<double> fallback) -> std::optional<double> {
    const auto it = j.find(key);
    if (it == j.end()) return fallback;
    if (it->is_null()) return std::nullopt;
    check(it->is_number(), src, ": field \"", key, "\" must be a number or null, got ", d::describe(*it));
    return it->get<double>();
  };
  s.t_min = wide("t_min", s.t_min);
  s.t_max = wide("t_max", s.t_max);
  s.confidence_threshold = number("confidence_threshold", s.confidence_threshold);
  s.stability_threshold = d::int_in_range(j, "stability_threshold", src, 0, 1 << 20, s.stability_threshold);
  if (const auto it = j.find("sampler_config"); it != j.end() && !it->is_null()) {
    check(it->is_object(), src, ": sampler_config must be an object, got ", d::describe(*it));
    if (const auto cls = d::opt_string(*it, "_cls_name", src + " (sampler_config)"))
      check(*cls == "EntropyBoundSamplerConfig", src, ": sampler_config._cls_name \"", *cls,
            "\" is not supported (supported: EntropyBoundSamplerConfig)");
    if (const auto b = d::opt_number(*it, "entropy_bound", src + " (sampler_config)"))
      s.entropy_bound = static_cast<float>(*b);
  }
  check_diffusion_settings(s, src);
  return s;
}

}  // namespace il::models
