// config.json of a DeepSeek-OCR folder: DeepSeek-OCR-2 (transformers' DeepseekOcr2Config,
// model_type "deepseek_ocr2"), DeepSeek-OCR (v1: the original deepseek-ai/DeepSeek-OCR layout,
// model_type "deepseek_vl_v2", vision_config.width.{sam_vit_b, clip-l-14-224}) and the text
// decoder both versions share, a DeepSeek-V2 mixture of
// experts with plain multi-head attention (no MLA). See docs/deepseek-ocr.md.
// Unsupported features are refused naming the field.
#pragma once

#include <array>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferencelayer/types.h"

namespace il::models {

// The decoder (transformers' DeepseekOcr2TextConfig; v1's language_config).
struct DeepseekTextConfig {
  int vocab = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int intermediate = 0;      // the dense layers' MLP
  int moe_intermediate = 0;  // one routed expert's MLP
  int experts = 0, shared_experts = 0, top_k = 0;
  float routed_scaling_factor = 1.0f;
  int max_positions = 0;
  float rms_eps = 1e-6f;
  float rope_theta = 10000.0f;
  bool attention_bias = false, mlp_bias = false;
  // Per layer: true where its MLP is the mixture of experts (mlp_layer_types "sparse", or
  // layer ≥ first_k_dense_replace when the list is absent).
  std::vector<bool> sparse;
};

// SAM ViT-B with its neck and two stride-2 convolutions (DeepseekOcr2SamVisionConfig; v1's
// DeepEncoder SAM with downsample [512, 1024]).
struct SamConfig {
  int hidden = 768, layers = 12, heads = 12, head_dim = 64, mlp_dim = 3072;
  int image_size = 1024, patch = 16, window = 14;
  std::vector<int> global_layers{2, 5, 8, 11};
  int neck_channels = 256;
  std::array<int, 2> downsample{512, 896};
  float eps = 1e-6f;
  int table_side() const { return image_size / patch; }  // the position table's grid
  bool is_global(int layer) const;
};

// DeepSeek-OCR-2's Qwen2-style encoder over SAM features (DeepseekOcr2VisionEncoderConfig).
struct QueryEncoderConfig {
  int hidden = 896, layers = 24, heads = 14, kv_heads = 2, head_dim = 64, intermediate = 4864;
  float rms_eps = 1e-6f;
  float rope_theta = 1000000.0f;
};

// DeepSeek-OCR (v1)'s CLIP-L over SAM features (vision_config.width["clip-l-14-224"]): pre-LN
// layers with quick-GELU MLPs; its position table covers a grid of image_size / patch_size.
struct ClipTowerConfig {
  int hidden = 1024, layers = 24, heads = 16, head_dim = 64, intermediate = 4096;
  int grid = 16;  // the position table's side: 1 + grid² rows
  float eps = 1e-5f;
};

struct DeepseekOcrConfig {
  std::string model_type, architecture;
  int version = 2;                 // 1: DeepSeek-OCR, 2: DeepSeek-OCR-2
  DeepseekTextConfig text;
  nlohmann::json vision;           // "vision_config" as given
  SamConfig sam;
  QueryEncoderConfig encoder;      // version 2
  ClipTowerConfig clip;            // version 1
  int image_token_id = 0;
  bool tie_word_embeddings = false;
  bool random_weights = false;
};

// The decoder's fields from a text_config object; `where` names it in errors.
DeepseekTextConfig parse_deepseek_text_config(const nlohmann::json& t, const std::string& where);

// Throws il::Error naming `source` and the field.
DeepseekOcrConfig parse_deepseek_ocr_config(const nlohmann::json& j, const std::string& source);

}  // namespace il::models
