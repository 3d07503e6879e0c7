// config.json of a SigLIP folder: a joint SiglipModel (model_type "siglip": text_config and
// vision_config) or the vision tower alone (model_type "siglip_vision_model", as vision-language
// models ship it). The fields that change the math; absent ones take transformers' defaults.
// SigLIP 2 ("siglip2", "siglip2_vision_model") is refused: its patch embedding is a Linear over
// patches the processor flattens (pixel_values of [patches, 3·P·P] with a pixel mask and each
// image's spatial shape), and its position table is resized to each image's grid, neither of
// which this engine implements.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "inferencelayer/types.h"

namespace il::models {

struct SiglipVisionConfig {
  int hidden = 768, layers = 12, heads = 12, intermediate = 3072;
  int channels = 3, image_size = 224, patch_size = 16;
  float eps = 1e-6f;
  Activation act = Activation::kGeluTanh;
  bool use_head = true;  // the MAP (attention-pooling) head
  // Conv2d with stride = kernel reads (image_size / patch_size)² patches from the top-left
  // corner; pixels past the last whole patch are not read.
  int grid() const { return image_size / patch_size; }
  int patches() const { return grid() * grid(); }
};

struct SiglipTextConfig {
  int hidden = 768, layers = 12, heads = 12, intermediate = 3072;
  int vocab = 32000, max_positions = 64, pad_id = 1, projection = 768;
  float eps = 1e-6f;
  Activation act = Activation::kGeluTanh;
};

struct SiglipConfig {
  std::string model_type;    // "siglip" or "siglip_vision_model"
  std::string architecture;  // architectures[0], or the model type's class
  SiglipVisionConfig vision;
  std::optional<SiglipTextConfig> text;  // joint folders
  bool random_weights = false;
};

// Throws il::Error naming `source` and the field.
SiglipConfig parse_siglip_config(const nlohmann::json& j, const std::string& source);

}  // namespace il::models
