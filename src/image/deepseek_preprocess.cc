#include "image/deepseek_preprocess.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace il::image {
namespace {

RgbImage resize(const RgbImage& im, std::size_t w, std::size_t h, const DeepseekProcessorConfig& c) {
  return c.torchvision ? resize_torch_uint8(im, w, h, ResampleFilter::bicubic)
                       : resize_pillow(im, w, h, ResampleFilter::bicubic);
}

// Python's round(): halves to the even neighbour.
std::size_t round_half_even(double v) {
  const double f = std::floor(v), d = v - f;
  double r = d > 0.5 ? f + 1 : d < 0.5 ? f : (std::fmod(f, 2.0) == 0.0 ? f : f + 1);
  return static_cast<std::size_t>(std::max(r, 0.0));
}

}  // namespace

std::array<std::size_t, 2> deepseek_tile_grid(std::size_t width, std::size_t height, const DeepseekProcessorConfig& c) {
  std::vector<std::array<std::size_t, 2>> grids;
  for (std::size_t cols = 1; cols <= c.max_tiles; ++cols)
    for (std::size_t rows = 1; rows <= c.max_tiles; ++rows)
      if (cols * rows >= c.min_tiles && cols * rows <= c.max_tiles) grids.push_back({cols, rows});
  std::stable_sort(grids.begin(), grids.end(), [](const auto& a, const auto& b) { return a[0] * a[1] < b[0] * b[1]; });
  const double aspect = static_cast<double>(width) / static_cast<double>(height);
  const double area = static_cast<double>(width) * static_cast<double>(height);
  double best = INFINITY;
  std::array<std::size_t, 2> pick{1, 1};
  for (const auto& g : grids) {
    const double diff = std::abs(aspect - static_cast<double>(g[0]) / static_cast<double>(g[1]));
    if (diff < best) {
      best = diff;
      pick = g;
    } else if (diff == best &&
               area > 0.5 * static_cast<double>(c.tile_size * c.tile_size) * static_cast<double>(g[0] * g[1])) {
      pick = g;
    }
  }
  return pick;
}

DeepseekViews deepseek_views(const RgbImage& page, const DeepseekProcessorConfig& c) {
  check(page.width > 0 && page.height > 0, "image: empty page");
  DeepseekViews v;
  if (std::max(page.width, page.height) > c.tile_size) {
    const auto [cols, rows] = deepseek_tile_grid(page.width, page.height, c);
    v.columns = cols;
    v.rows = rows;
    const RgbImage big = resize(page, c.tile_size * cols, c.tile_size * rows, c);
    for (std::size_t i = 0; i < cols * rows; ++i) {
      const std::size_t x0 = (i % cols) * c.tile_size, y0 = (i / cols) * c.tile_size;
      RgbImage t;
      t.width = t.height = c.tile_size;
      t.pixels.resize(c.tile_size * c.tile_size * 3);
      for (std::size_t y = 0; y < c.tile_size; ++y)
        std::copy_n(big.at(x0, y0 + y), c.tile_size * 3, t.pixels.data() + y * c.tile_size * 3);
      v.tiles.push_back(std::move(t));
    }
  }
  const double scale = static_cast<double>(c.size) / static_cast<double>(std::max(page.width, page.height));
  const std::size_t w = std::max<std::size_t>(1, round_half_even(static_cast<double>(page.width) * scale));
  const std::size_t h = std::max<std::size_t>(1, round_half_even(static_cast<double>(page.height) * scale));
  const RgbImage fit = resize(page, w, h, c);
  // pad_to_square: the longer side's square, the image at ((side − w) / 2, (side − h) / 2).
  const std::size_t side = std::max(w, h), left = (side - w) / 2, top = (side - h) / 2;
  v.global.width = v.global.height = side;
  v.global.pixels.resize(side * side * 3);
  for (std::size_t i = 0; i < side * side; ++i) std::copy(c.background.begin(), c.background.end(), &v.global.pixels[i * 3]);
  for (std::size_t y = 0; y < h; ++y)
    std::copy_n(fit.at(0, y), w * 3, v.global.pixels.data() + ((top + y) * side + left) * 3);
  return v;
}

std::vector<float> deepseek_normalise(const RgbImage& view) {
  const std::size_t n = view.width * view.height;
  std::vector<float> out(3 * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t ch = 0; ch < 3; ++ch)
      out[ch * n + i] = (static_cast<float>(view.pixels[i * 3 + ch]) / 255.0f - 0.5f) / 0.5f;
  return out;
}

}  // namespace il::image
