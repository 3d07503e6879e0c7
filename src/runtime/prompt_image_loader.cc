#include "runtime/prompt_image_loader.h"

#include <algorithm>
#include <span>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_util.h"
#include "runtime/view_vision.h"

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

PromptImageLoader::PromptImageLoader(const std::filesystem::path& dir, const EngineOptions& options,
                                     const models::ViewVisionSpec& views)
    : view_patch_(views.patch), limits_{options.max_image_bytes, options.max_image_pixels} {
  if (views.clip) {
    // v1: the modes at the model's scale; each must fit the model's tables.
    v1_modes_ = true;
    native_pixels_ = views.native_side * views.patch;
    try {
      for (const char* mode : image::kDeepseekV1Modes) {
        const image::DeepseekProcessorConfig c = image::deepseek_v1_mode(mode, native_pixels_);
        for (std::size_t side : {c.size, c.tile_size})
          check(side % views.patch == 0 &&
                    std::find(views.sides.begin(), views.sides.end(), side / views.patch) != views.sides.end(),
                "mode ", mode, ": views of ", side, " pixels do not fit the model's position tables");
      }
      views_config_ = image::deepseek_v1_mode("", native_pixels_);
    } catch (const Error& e) {
      views_config_.reset();
      missing_ = e.what();
    }
    return;
  }
  image::DeepseekProcessorConfig c;
  const std::filesystem::path file = dir / "preprocessor_config.json";
  // As for GLM-OCR: a processor that cannot serve the model does not stop it loading (the check
  // form takes pixel_values); load() refuses, saying why.
  try {
  if (!dir.empty() && std::filesystem::exists(file)) {
    const nlohmann::json j = io::read_json_file(file);
    const std::string src = file.string();
    if (const auto it = j.find("size"); it != j.end() && it->is_object()) {
      const int h = io::detail::int_in_range(*it, "height", src + " (size)", 1, 1 << 16);
      const int w = io::detail::int_in_range(*it, "width", src + " (size)", 1, 1 << 16);
      check(h == w, src, ": size ", h, " x ", w, " is not square (the global view is)");
      c.size = static_cast<std::size_t>(h);
    }
    c.tile_size = static_cast<std::size_t>(io::detail::int_in_range(j, "tile_size", src, 1, 1 << 16, 768));
    c.min_tiles = static_cast<std::size_t>(io::detail::int_in_range(j, "min_patches", src, 1, 64, 2));
    c.max_tiles = static_cast<std::size_t>(io::detail::int_in_range(j, "max_patches", src, 1, 64, 6));
    check(c.min_tiles <= c.max_tiles, src, ": min_patches ", c.min_tiles, " above max_patches ", c.max_tiles);
    check(io::detail::opt_bool(j, "crop_to_patches", src).value_or(true), src,
          ": crop_to_patches = false is not supported (transformers 5.17 cannot run it either: docs/deepseek-ocr.md §3)");
  }
  // The views must be ones the model holds tables for.
  for (std::size_t side : {c.size, c.tile_size}) {
    check(side % views.patch == 0 &&
              std::find(views.sides.begin(), views.sides.end(), side / views.patch) != views.sides.end(),
          file.string(), ": views of ", side, " pixels do not fit the model's position tables");
  }
  views_config_ = c;
  } catch (const Error& e) {
    views_config_.reset();
    missing_ = e.what();
  }
}

PatchImage PromptImageLoader::load(const std::vector<std::uint8_t>& bytes, std::string_view name,
                                   std::string_view mode) const {
  if (view_patch_ > 0 && !views_config_) throw Error(missing_);
  if (!mode.empty() && !v1_modes_) throw make_error("mode '", mode, "': this model has no resolution modes");
  if (views_config_) {
    const image::DeepseekProcessorConfig config =
        v1_modes_ ? image::deepseek_v1_mode(mode, native_pixels_) : *views_config_;
    const image::RgbImage rgb = image::decode_image(std::span<const std::uint8_t>(bytes), name, limits_);
    const image::DeepseekViews v = image::deepseek_views(rgb, config);
    std::vector<float> tiles;
    for (const image::RgbImage& t : v.tiles) {
      const std::vector<float> n = image::deepseek_normalise(t);
      tiles.insert(tiles.end(), n.begin(), n.end());
    }
    const std::vector<float> global = image::deepseek_normalise(v.global);
    PatchImage page = make_view_page(global.data(), v.global.width, tiles.data(), v.tiles.size(), config.tile_size,
                                     view_patch_);
    page.grid_thw = {1, static_cast<int>(rgb.height), static_cast<int>(rgb.width)};  // the page's pixels
    if (!v.tiles.empty()) page.tile_grid = {static_cast<int>(v.columns), static_cast<int>(v.rows)};
    return page;
  }
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
