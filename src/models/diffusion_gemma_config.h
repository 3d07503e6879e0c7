// config.json of a DiffusionGemma folder (transformers' DiffusionGemmaConfig, model_type
// "diffusion_gemma"): the text stack's fields that change the math (docs/diffusion-gemma.md §1),
// per-layer attention geometry, and the canvas length. The vision tower is not served (text
// generation only); its config block is not read. Unsupported features are refused naming the
// field. Also generation_config.json's diffusion settings (§6).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace il::models {

// One layer's attention: sliding (head_dim, kv_heads, its own v_proj, default rope over the
// whole head) or full (global head dim and KV heads, K = V from k_proj, proportional rope).
struct DiffusionGemmaLayer {
  bool sliding = true;
  int head_dim = 0, kv_heads = 0;
};

struct DiffusionGemmaConfig {
  std::string model_type, architecture;
  int vocab = 0, hidden = 0, intermediate = 0, layers = 0, heads = 0;
  int experts = 0, top_k = 0, moe_intermediate = 0;
  int max_positions = 0;
  int sliding_window = 0;
  int canvas_length = 0;
  float rms_eps = 1e-6f;
  float sliding_theta = 10000.0f, full_theta = 1000000.0f;
  float partial_rotary_factor = 0.25f;  // of the full layers' rope pairs, the ones that turn
  float softcap = 30.0f;
  std::vector<DiffusionGemmaLayer> layer;
  bool random_weights = false;
};

DiffusionGemmaConfig parse_diffusion_gemma_config(const nlohmann::json& j, const std::string& source);

// generation_config.json's diffusion settings (DiffusionGemmaGenerationConfig), transformers'
// defaults where a field is absent. Per request, each may be overridden.
struct DiffusionSettings {
  int max_new_tokens = 256;
  bool max_new_tokens_from_request = false;  // a request's own count: max_length never replaces it
  // The whole sequence's length cap (prompt included), when the file sets one: see
  // runtime::diffusion_blocks for how transformers applies it.
  std::optional<int> max_length;
  int max_denoising_steps = 48;
  // The temperature schedule T(n) = t_min + (t_max − t_min) · n / N; absent: T = 1.
  std::optional<double> t_min = 0.4, t_max = 0.8;  // as Python floats: T is f32(t_min + f32(t_max − t_min)·n/N)
  float entropy_bound = 0.1f;
  // The stop rule: argmax canvases repeated stability_threshold times and mean entropy below
  // confidence_threshold; no confidence_threshold: no early stop.
  int stability_threshold = 1;
  std::optional<float> confidence_threshold = 0.005f;
  std::vector<int32_t> end_ids;
  std::optional<int32_t> pad_id;
};

// Throws il::Error naming `source` and the field for values transformers' validate() refuses.
void check_diffusion_settings(const DiffusionSettings& s, const std::string& source);
// The folder's generation_config.json (defaults when there is none), ids checked against vocab.
DiffusionSettings read_diffusion_settings(const std::filesystem::path& dir, int vocab);

}  // namespace il::models
