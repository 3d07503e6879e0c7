// config.json of a GLM-OCR folder (transformers' GlmOcrConfig): the text decoder's fields that
// change the math, the multimodal token ids, and the vision tower's block (parsed by
// models/glm_ocr_vision_config.h). Unsupported features are refused naming the field.
#pragma once

#include <array>
#include <string>

#include <nlohmann/json.hpp>

#include "inferencelayer/types.h"

namespace il::models {

struct GlmOcrTextConfig {
  int vocab = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0;
  int max_positions = 0;
  float rms_eps = 1e-5f;
  float rope_theta = 10000.0f;
  // The rotary embedding covers rotary_dim = head_dim · partial_rotary_factor columns of each
  // head (GPT-J pairs), its rotary_dim / 2 frequencies cut into M-RoPE sections over the
  // (temporal, height, width) position axes.
  int rotary_dim = 0;
  std::array<int, 3> mrope_section{};
  Activation act = Activation::kSilu;
};

struct GlmOcrConfig {
  std::string model_type, architecture;
  GlmOcrTextConfig text;
  nlohmann::json vision;  // the "vision_config" object, for the vision tower's parser
  int image_token_id = 0, image_start_token_id = 0, image_end_token_id = 0;
  int video_token_id = 0;
  bool tie_word_embeddings = false;
  bool random_weights = false;
};

// Throws il::Error naming `source` and the field.
GlmOcrConfig parse_glm_ocr_config(const nlohmann::json& j, const std::string& source);

}  // namespace il::models
