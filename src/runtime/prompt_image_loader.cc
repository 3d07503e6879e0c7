#include "runtime/prompt_image_loader.h"

#include <span>

#include "core/error.h"

namespace il::runtime {

image::GlmImageConfig glm_ocr_release_preprocessor(std::size_t patch_size, std::size_t temporal_patch_size,
                                                   std::size_t merge) {
  image::GlmImageConfig c;
  c.processor_type = "Glm46VImageProcessor";
  c.min_pixels = 12544;
  c.max_pixels = 9633792;
  c.patch_size = patch_size;
  c.temporal_patch_size = temporal_patch_size;
  c.merge_size = merge;
  return c;
}

PromptImageLoader::PromptImageLoader(const std::filesystem::path& dir, const EngineOptions& options,
                                     std::size_t patch_dim, std::size_t merge,
                                     std::optional<image::GlmImageConfig> default_config)
    : limits_{options.max_image_bytes, options.max_image_pixels} {
  const std::filesystem::path file = dir / "preprocessor_config.json";
  try {
    if (!dir.empty() && std::filesystem::exists(file)) {
      config_ = image::read_glm_image_config(file);
    } else if (default_config) {
      config_ = std::move(default_config);
    } else {
      throw make_error(file.string(), " is missing: without the folder's image processor settings images cannot be "
                       "preprocessed (send the processor's pixel_values instead)");
    }
    check(config_->patch_dim() == patch_dim, file.string(), ": the processor makes patch rows of ",
          config_->patch_dim(), " values (3 x ", config_->temporal_patch_size, " x ", config_->patch_size, "²) but the "
          "model takes ", patch_dim);
    check(config_->merge_size == merge, file.string(), ": merge_size ", config_->merge_size, " but the model merges ",
          merge, " x ", merge, " patches");
  } catch (const Error& e) {
    config_.reset();
    missing_ = e.what();
  }
}

PatchImage PromptImageLoader::load(const std::vector<std::uint8_t>& bytes, std::string_view name) const {
  if (!config_) throw Error(missing_);
  const image::RgbImage rgb = image::decode_image(std::span<const std::uint8_t>(bytes), name, limits_);
  image::PatchedImage p;
  try {
    p = image::glm_preprocess(rgb, *config_);
  } catch (const Error& e) {
    throw Error(std::string(name) + ": " + e.what());
  }
  PatchImage out;
  out.rows = std::move(p.rows);
  out.patch_dim = p.patch_dim;
  out.grid_thw = p.grid_thw;
  return out;
}

}  // namespace il::runtime
