// Encoded image bytes → the patch rows a multimodal generating model's prompt takes
// (Engine::load_prompt_image): decoding as transformers' load_image, then the folder's GLM-V
// image processor (image/glm_preprocess.h), into transformers' pixel_values and image_grid_thw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "image/decode.h"
#include "image/deepseek_preprocess.h"
#include "image/glm_preprocess.h"
#include "inferencelayer/engine.h"
#include "models/model.h"

namespace il::runtime {

class PromptImageLoader {
 public:
  // The folder's preprocessor_config.json, checked against the model's patch rows (patch_dim,
  // merge); without the file, `default_config` when given (a model built from a config alone).
  // A missing or mismatched processor does not stop the model loading: load() refuses, saying why.
  PromptImageLoader(const std::filesystem::path& dir, const EngineOptions& options, std::size_t patch_dim,
                    std::size_t merge, std::optional<image::GlmImageConfig> default_config);
  // DeepSeek-OCR-2: DeepseekOcr2ImageProcessor (image/deepseek_preprocess.h), its sizes from the
  // folder's preprocessor_config.json when it has one, into a page of views for `views`.
  // DeepSeek-OCR v1 (views.clip): its reference preprocessing in the mode asked for.
  PromptImageLoader(const std::filesystem::path& dir, const EngineOptions& options, const models::ViewVisionSpec& views);

  // Thread-safe; errors name `name`. `mode`: DeepSeek-OCR v1's resolution modes
  // (image::deepseek_v1_mode; "" its default); other models take "" only.
  PatchImage load(const std::vector<std::uint8_t>& bytes, std::string_view name, std::string_view mode = {}) const;

  // The processor the loader runs (nullptr when it has none).
  const image::GlmImageConfig* config() const { return config_ ? &*config_ : nullptr; }

 private:
  std::optional<image::GlmImageConfig> config_;
  std::optional<image::DeepseekProcessorConfig> views_config_;
  bool v1_modes_ = false;
  std::size_t native_pixels_ = 0;
  std::size_t view_patch_ = 0;
  std::string missing_;  // why there is no config
  image::DecodeLimits limits_;
};

// GLM-OCR's release processor for a model of this patch geometry (a model built from a config
// alone: benchmarks): Glm46VImageProcessor, the pixel budget {12544, 9633792} (docs/glm-ocr.md).
image::GlmImageConfig glm_ocr_release_preprocessor(std::size_t patch_size, std::size_t temporal_patch_size,
                                                   std::size_t merge);

}  // namespace il::runtime
