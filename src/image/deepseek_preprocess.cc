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

DeepseekProcessorConfig deepseek_v1_mode(std::string_view mode, std::size_t native) {
  const auto at = [native](std::size_t num, std::size_t den) { return native * num / den; };
  DeepseekProcessorConfig c;
  c.torchvision = false;
  c.pillow_pad = true;
  c.v1_candidates = true;
  c.crop = false;
  if (mode.empty() || mode == "gundam") {
    c.size = native;
    c.tile_size = at(5, 8);
    c.crop = true;
  } else if (mode == "tiny" || mode == "small") {
    c.size = c.tile_size = mode == "tiny" ? at(1, 2) : at(5, 8);
    c.stretch = true;
  } else if (mode == "base" || mode == "large") {
    c.size = c.tile_size = mode == "base" ? native : at(5, 4);
  } else {
    throw make_error("mode '", mode, "' is not one of gundam (the default), tiny, small, base, large");
  }
  return c;
}

std::array<std::size_t, 2> deepseek_tile_grid(std::size_t width, std::size_t height, const DeepseekProcessorConfig& c) {
  std::vector<std::array<std::size_t, 2>> grids;
  if (c.v1_candidates && c.min_tiles == 2 && c.max_tiles == 6) {
    // v1's dynamic_preprocess builds its candidates as a Python set, then sorts them by product:
    // among equal products they keep the set's iteration order, which CPython fixes for these
    // tuples (small-int hashing is not randomised) and which decides ties. Read off CPython 3.11.
    grids = {{1, 2}, {2, 1}, {3, 1}, {1, 3}, {4, 1}, {1, 4}, {2, 2}, {1, 5}, {5, 1}, {6, 1}, {2, 3}, {1, 6}, {3, 2}};
  } else {
    for (std::size_t cols = 1; cols <= c.max_tiles; ++cols)
      for (std::size_t rows = 1; rows <= c.max_tiles; ++rows)
        if (cols * rows >= c.min_tiles && cols * rows <= c.max_tiles) grids.push_back({cols, rows});
    std::stable_sort(grids.begin(), grids.end(), [](const auto& a, const auto& b) { return a[0] * a[1] < b[0] * b[1]; });
  }
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
  if (c.stretch) {
    // v1 Tiny / Small: the page squeezed to the view, then (a no-op) padded.
    v.global = resize(page, c.size, c.size, c);
    return v;
  }
  if (c.crop && std::max(page.width, page.height) > c.tile_size) {
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
  std::size_t w = std::max<std::size_t>(1, round_half_even(static_cast<double>(page.width) * scale));
  std::size_t h = std::max<std::size_t>(1, round_half_even(static_cast<double>(page.height) * scale));
  if (c.pillow_pad) {
    // ImageOps.contain: the longer side is the view's, the other round(other / longer · size).
    const double pw = static_cast<double>(page.width), ph = static_cast<double>(page.height);
    w = page.width >= page.height ? c.size : std::max<std::size_t>(1, round_half_even(pw / ph * static_cast<double>(c.size)));
    h = page.height >= page.width ? c.size : std::max<std::size_t>(1, round_half_even(ph / pw * static_cast<double>(c.size)));
  }
  const RgbImage fit = resize(page, w, h, c);
  // pad_to_square: the longer side's square, the image at ((side − w) / 2, (side − h) / 2);
  // ImageOps.pad rounds the offset half to even instead.
  const std::size_t side = std::max(w, h);
  const std::size_t left = c.pillow_pad ? round_half_even(static_cast<double>(side - w) / 2.0) : (side - w) / 2;
  const std::size_t top = c.pillow_pad ? round_half_even(static_cast<double>(side - h) / 2.0) : (side - h) / 2;
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
