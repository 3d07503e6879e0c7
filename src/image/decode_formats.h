// What each format's decoder gives decode_image: the pixels already in RGB (Pillow's conversion
// from the format's mode) and the orientation found in the file's metadata (1 when none).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "image/decode.h"
#include "image/rgb_image.h"

namespace il::image::detail {

struct DecodedImage {
  RgbImage image;
  int orientation = 1;  // EXIF Orientation, 1..8 (anything else is left as it is, as PIL does)
};

DecodedImage decode_jpeg(std::span<const std::uint8_t> bytes, std::string_view name, const DecodeLimits& limits);
DecodedImage decode_png(std::span<const std::uint8_t> bytes, std::string_view name, const DecodeLimits& limits);
DecodedImage decode_webp(std::span<const std::uint8_t> bytes, std::string_view name, const DecodeLimits& limits);

// Throws the "too large" error when width × height exceeds limits.max_pixels (or is zero).
void check_pixel_limit(std::uint64_t width, std::uint64_t height, std::string_view name, std::string_view format,
                       const DecodeLimits& limits);

// Allocates the RGB image once the limit is checked.
RgbImage make_rgb(std::size_t width, std::size_t height);

}  // namespace il::image::detail
