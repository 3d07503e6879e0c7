// The vision tower's configuration of a GLM-OCR folder: the `vision_config` block of a glm_ocr
// config.json (GlmOcrForConditionalGeneration), or a GlmOcrVisionModel's own config.json
// (model_type "glm_ocr_vision"). Absent fields take GlmOcrVisionConfig's defaults (transformers
// 5.17); values the tower cannot run are refused with an il::Error naming the field.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace il::models {

struct GlmOcrVisionConfig {
  int depth = 24, hidden = 1024, heads = 16, intermediate = 4096, out_hidden = 1536;
  int patch = 14, temporal_patch = 2, merge = 2, channels = 3;
  float eps = 1e-5f;
  float rope_theta = 10000.0f;  // rope_parameters.rope_theta (GlmOcrVisionRotaryEmbedding's theta)
  bool attention_bias = true;   // qkv, proj and the block MLP's linears
  std::size_t head_dim() const { return static_cast<std::size_t>(hidden / heads); }
  // One patch row: channels × temporal patch × patch × patch values (the Conv3d's kernel).
  std::size_t patch_dim() const {
    return static_cast<std::size_t>(channels) * static_cast<std::size_t>(temporal_patch) *
           static_cast<std::size_t>(patch) * static_cast<std::size_t>(patch);
  }
  std::size_t merge_tokens() const { return static_cast<std::size_t>(merge * merge); }
  // The merger's inner width: out_hidden · in_channels (transformers' context_dim).
  std::size_t merger_inner() const { return static_cast<std::size_t>(out_hidden) * static_cast<std::size_t>(channels); }
};

// `j` is the vision config object itself; `source` names it in errors.
GlmOcrVisionConfig parse_glm_ocr_vision_config(const nlohmann::json& j, const std::string& source);

// The vision config of a whole config.json: its "vision_config" (model_type "glm_ocr"), or the
// object itself (model_type "glm_ocr_vision").
GlmOcrVisionConfig glm_ocr_vision_config_of(const nlohmann::json& config, const std::string& source);

}  // namespace il::models
