// Encoded image bytes → the pixel_values an image model takes (Engine::load_image): decoding as
// transformers' load_image, then the folder's preprocessor_config.json as its image processor.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "image/decode.h"
#include "image/preprocess.h"
#include "inferencelayer/engine.h"

namespace il::runtime {

class ImageLoader {
 public:
  // The folder's preprocessor_config.json, checked against the model's input geometry
  // (info.image_channels / height / width). Without the file, `default_config` when given (a
  // model built from a config alone: its release processor). A missing, unsupported or
  // mismatched processor does not stop the model loading: load() refuses, saying why.
  ImageLoader(const std::filesystem::path& dir, const ModelInfo& info, const EngineOptions& options,
              std::optional<image::PreprocessorConfig> default_config);

  // Thread-safe: decodes and preprocesses one image, into ImageInput's compact form (the uint8
  // image and the processor's byte values, one table shared by every image); errors name `name`.
  ImageInput load(const std::vector<std::uint8_t>& bytes, std::string_view name) const;

 private:
  std::optional<image::PreprocessorConfig> config_;
  std::shared_ptr<const std::vector<float>> byte_values_;  // the config's byte_value_table
  std::string missing_;  // why there is no config
  image::DecodeLimits limits_;
  int channels_ = 0, height_ = 0, width_ = 0;
};

// What a SigLIP folder's processor is on the Hub (SiglipImageProcessor: resize to the model's
// image size, bicubic, rescale 1/255, mean and std 0.5): the preprocessing of a model built from
// a config alone (benchmarks).
image::PreprocessorConfig siglip_release_preprocessor(int height, int width);

}  // namespace il::runtime
