// DeepSeek-OCR-2's image processor (transformers 5.17 DeepseekOcr2ImageProcessor and its Pil
// class; docs/deepseek-ocr.md §3): a page becomes a global view — the image scaled so its longer
// side is `size`, centred on a square of the background colour — and, when its longer side
// passes `tile_size`, tiles: the whole image resized (aspect not kept) to the grid of tiles whose
// aspect is closest to the page's (get_optimal_tiled_canvas), cut row-major. Values rescaled to
// [0, 1] and normalised with mean and std 0.5 per channel.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

#include "image/resize.h"
#include "image/rgb_image.h"

namespace il::image {

struct DeepseekProcessorConfig {
  std::size_t size = 1024, tile_size = 768, min_tiles = 2, max_tiles = 6;
  std::array<std::uint8_t, 3> background{127, 127, 127};
  bool torchvision = true;  // the default class's resize; false: the Pil class's (Pillow)
  // DeepSeek-OCR (v1)'s reference preprocessing (its `infer`: crop_mode, base_size, image_size):
  bool crop = true;          // tiles when the page passes tile_size; false: the global view alone
  bool stretch = false;      // the page resized to size × size first, aspect not kept (Tiny, Small)
  bool pillow_pad = false;   // the global view as ImageOps.pad makes it (Python rounding of the fit and offset)
  bool v1_candidates = false;  // dynamic_preprocess's candidate order (a CPython set sorted by product)
};

// DeepSeek-OCR (v1)'s resolution modes (the model card's, for its native 1024-pixel view): "tiny"
// 512, "small" 640, "base" 1024, "large" 1280 (one view), "gundam" (the default: a 1024 global
// view plus 640 tiles, 2–6 of them); Pillow resizing, background 127. `native`: the model's
// native view in pixels (SAM's image_size), the sizes scaling with it (a tiny test model of 64
// pixels: 32, 40, 64, 80, tiles of 40). Throws il::Error naming the modes otherwise.
DeepseekProcessorConfig deepseek_v1_mode(std::string_view mode, std::size_t native = 1024);
inline constexpr const char* kDeepseekV1Modes[] = {"gundam", "tiny", "small", "base", "large"};

// (columns, rows) of tiles for a page of width × height (GotOcr2's get_optimal_tiled_canvas):
// candidates (c, r) with min ≤ c·r ≤ max, c-major then r, stably sorted by c·r; the first that
// minimises |width / height − c / r| wins, a later one of the same difference replaces it when
// width · height > 0.5 · tile² · c · r.
std::array<std::size_t, 2> deepseek_tile_grid(std::size_t width, std::size_t height, const DeepseekProcessorConfig& c);

struct DeepseekViews {
  RgbImage global;                // size × size, before normalisation
  std::vector<RgbImage> tiles;    // tile_size × tile_size each, row-major over the grid
  std::size_t columns = 0, rows = 0;
};
DeepseekViews deepseek_views(const RgbImage& page, const DeepseekProcessorConfig& c);

// An image as CHW floats normalised as the processor does: (v / 255 − 0.5) / 0.5.
std::vector<float> deepseek_normalise(const RgbImage& view);

}  // namespace il::image
