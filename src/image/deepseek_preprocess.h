// DeepSeek-OCR-2's image processor (transformers 5.17 DeepseekOcr2ImageProcessor and its Pil
// class; docs/deepseek-ocr.md §3): a page becomes a global view — the image scaled so its longer
// side is `size`, centred on a square of the background colour — and, when its longer side
// passes `tile_size`, tiles: the whole image resized (aspect not kept) to the grid of tiles whose
// aspect is closest to the page's (get_optimal_tiled_canvas), cut row-major. Values rescaled to
// [0, 1] and normalised with mean and std 0.5 per channel.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "image/resize.h"
#include "image/rgb_image.h"

namespace il::image {

struct DeepseekProcessorConfig {
  std::size_t size = 1024, tile_size = 768, min_tiles = 2, max_tiles = 6;
  std::array<std::uint8_t, 3> background{127, 127, 127};
  bool torchvision = true;  // the default class's resize; false: the Pil class's (Pillow)
};

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
