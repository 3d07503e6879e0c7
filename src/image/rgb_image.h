// A decoded image as the models' preprocessing reads it: 8-bit RGB, row-major, three bytes per
// pixel, no alpha (what PIL's Image.convert("RGB") gives: an alpha channel is dropped, not
// composited). image/decode.h makes one from JPEG, PNG or WebP bytes; image/preprocess.h turns
// one into a model's pixel_values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace il::image {

struct RgbImage {
  std::size_t width = 0;
  std::size_t height = 0;
  std::vector<std::uint8_t> pixels;  // height × width × 3

  const std::uint8_t* at(std::size_t x, std::size_t y) const { return pixels.data() + (y * width + x) * 3; }
};

}  // namespace il::image
