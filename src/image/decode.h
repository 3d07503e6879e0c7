// Decoding an image file's bytes into 8-bit RGB, as transformers' image_utils.load_image does it:
// PIL.Image.open, PIL.ImageOps.exif_transpose (the EXIF / XMP orientation applied, all 8 values),
// then Image.convert("RGB") (grayscale replicated, palette looked up, 16-bit samples reduced the way
// Pillow reduces them, alpha dropped and not composited, Adobe CMYK converted with Pillow's formula).
// JPEG (libjpeg-turbo), PNG (libpng; APNG gives its default image, as PIL's first frame) and WebP
// (libwebp; an animation gives its first frame) are accepted; the format is sniffed from the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "image/rgb_image.h"

namespace il::image {

struct DecodeLimits {
  std::size_t max_bytes = 0;   // the input's size
  std::size_t max_pixels = 0;  // width × height, read from the header before anything is decoded
};

// Throws il::Error naming `name` for an unknown format, truncated or corrupt data, or an image
// beyond the limits (saying the limit and the size). Never reads past `bytes`.
RgbImage decode_image(std::span<const std::uint8_t> bytes, std::string_view name, const DecodeLimits& limits);

}  // namespace il::image
