#include "runtime/merge_window_vision_batch.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace il::runtime {

plan::Batch make_merge_window_vision_batch(const std::vector<float>& pixel_values, std::size_t patch_dim,
                                           const std::vector<std::array<int, 3>>& grid_thw, int merge) {
  check(patch_dim > 0, "vision batch: patch_dim is zero");
  check(merge > 0, "vision batch: merge size ", merge);
  check(!grid_thw.empty(), "vision batch: no images (image_grid_thw is empty)");
  check(pixel_values.size() % patch_dim == 0, "vision batch: ", pixel_values.size(),
        " pixel values are not whole patch rows of ", patch_dim);
  std::size_t total = 0;
  for (std::size_t i = 0; i < grid_thw.size(); ++i) {
    const auto [t, h, w] = grid_thw[i];
    check(t > 0 && h > 0 && w > 0, "vision batch: image ", i, ": image_grid_thw [", t, ", ", h, ", ", w,
          "] must be positive");
    check(h % merge == 0 && w % merge == 0, "vision batch: image ", i, ": grid ", h, " × ", w,
          " is not divisible by the merge size ", merge);
    const std::size_t n = static_cast<std::size_t>(t) * static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
    check(n <= static_cast<std::size_t>(std::numeric_limits<int32_t>::max()) - total, "vision batch: too many patches");
    total += n;
  }
  check(total == pixel_values.size() / patch_dim, "vision batch: image_grid_thw counts ", total, " patches, ",
        "pixel_values holds ", pixel_values.size() / patch_dim);
  for (std::size_t i = 0; i < pixel_values.size(); ++i)
    check(std::isfinite(pixel_values[i]), "vision batch: pixel value ", i, " (patch ", i / patch_dim,
          ") is not finite");

  plan::Batch b;
  b.tokens.assign(total, 0);
  b.patches = pixel_values;
  b.patch_dim = patch_dim;
  b.rope_positions.resize(2 * total);
  b.seq_starts.push_back(0);
  const std::size_t unit = static_cast<std::size_t>(merge) * static_cast<std::size_t>(merge);
  std::size_t row = 0;
  for (const auto& [t, h, w] : grid_thw) {
    const std::size_t windows_per_row = static_cast<std::size_t>(w / merge);
    const std::size_t frame = static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
    for (int f = 0; f < t; ++f) {
      for (std::size_t i = 0; i < frame; ++i, ++row) {
        const std::size_t window = i / unit, in = i % unit;
        const std::size_t hp = window / windows_per_row * merge + in / static_cast<std::size_t>(merge);
        const std::size_t wp = window % windows_per_row * merge + in % static_cast<std::size_t>(merge);
        b.rope_positions[row] = static_cast<int32_t>(hp);
        b.rope_positions[total + row] = static_cast<int32_t>(wp);
      }
      b.seq_starts.push_back(static_cast<int32_t>(row));
    }
  }
  return b;
}

}  // namespace il::runtime
