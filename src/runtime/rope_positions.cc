#include "runtime/rope_positions.h"

#include <algorithm>

#include "core/error.h"

namespace il::runtime {

PromptPositions mrope_positions(std::span<const int32_t> ids, int32_t image_token,
                                std::span<const std::array<int, 3>> grids, std::size_t merge) {
  const std::size_t n = ids.size();
  PromptPositions out;
  out.axes.assign(3 * n, 0);
  int32_t* t_axis = out.axes.data();
  int32_t* h_axis = t_axis + n;
  int32_t* w_axis = h_axis + n;
  int32_t next = 0;  // the running index
  int32_t largest = -1;
  std::size_t image = 0;
  const int m = static_cast<int>(merge);
  for (std::size_t i = 0; i < n;) {
    if (ids[i] != image_token) {
      t_axis[i] = h_axis[i] = w_axis[i] = next;
      largest = std::max(largest, next);
      ++next;
      ++i;
      continue;
    }
    check(image < grids.size(), "prompt: image token run at position ", i, " but only ", grids.size(),
          " image(s) given");
    const auto [gt, gh, gw] = grids[image];
    check(gt >= 1 && gh >= m && gw >= m && gh % m == 0 && gw % m == 0, "image ", image, ": grid [", gt, ", ", gh,
          ", ", gw, "] is not made of whole ", m, "×", m, " merge windows");
    const int rows = gh / m, cols = gw / m;
    const std::size_t count = static_cast<std::size_t>(gt) * static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
    check(i + count <= n && std::all_of(ids.begin() + static_cast<std::ptrdiff_t>(i),
                                        ids.begin() + static_cast<std::ptrdiff_t>(i + count),
                                        [&](int32_t id) { return id == image_token; }),
          "image ", image, ": its grid [", gt, ", ", gh, ", ", gw, "] needs ", count,
          " image tokens in a row at position ", i, " of the prompt");
    std::size_t k = i;
    for (int t = 0; t < gt; ++t)
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c, ++k) {
          t_axis[k] = next + t;
          h_axis[k] = next + r;
          w_axis[k] = next + c;
        }
    largest = std::max({largest, next + gt - 1, next + rows - 1, next + cols - 1});
    next += std::max(rows, cols);
    i += count;
    ++image;
  }
  check(image == grids.size(), "prompt: ", grids.size(), " image(s) given but ", image,
        " image token run(s) in the prompt");
  out.delta = largest + 1 - static_cast<int32_t>(n);
  return out;
}

}  // namespace il::runtime
