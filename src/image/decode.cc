#include "image/decode.h"

#include <cstring>
#include <utility>

#include "core/error.h"
#include "image/decode_formats.h"
#include "image/exif_orientation.h"

namespace il::image {
namespace detail {

void check_pixel_limit(std::uint64_t width, std::uint64_t height, std::string_view name, std::string_view format,
                       const DecodeLimits& limits) {
  check(width > 0 && height > 0, "image ", name, ": the ", format, " header gives an empty image (", width, "x",
        height, ")");
  // width × height cannot overflow: both come from 32-bit header fields.
  const std::uint64_t pixels = width * height;
  check(pixels <= limits.max_pixels, "image ", name, ": too large: ", width, "x", height, " = ", pixels,
        " pixels, the limit is ", limits.max_pixels, " pixels");
}

RgbImage make_rgb(std::size_t width, std::size_t height) {
  RgbImage image;
  image.width = width;
  image.height = height;
  image.pixels.resize(width * height * 3);
  return image;
}

}  // namespace detail

namespace {

enum class Format { jpeg, png, webp, unknown };

Format sniff(std::span<const std::uint8_t> b) {
  static constexpr std::uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return Format::jpeg;
  if (b.size() >= 8 && std::memcmp(b.data(), png_sig, 8) == 0) return Format::png;
  if (b.size() >= 12 && std::memcmp(b.data(), "RIFF", 4) == 0 && std::memcmp(b.data() + 8, "WEBP", 4) == 0) {
    return Format::webp;
  }
  return Format::unknown;
}

}  // namespace

RgbImage decode_image(std::span<const std::uint8_t> bytes, std::string_view name, const DecodeLimits& limits) {
  check(bytes.size() <= limits.max_bytes, "image ", name, ": too large: ", bytes.size(),
        " bytes, the limit is ", limits.max_bytes, " bytes");
  detail::DecodedImage decoded;
  switch (sniff(bytes)) {
    case Format::jpeg: decoded = detail::decode_jpeg(bytes, name, limits); break;
    case Format::png: decoded = detail::decode_png(bytes, name, limits); break;
    case Format::webp: decoded = detail::decode_webp(bytes, name, limits); break;
    case Format::unknown:
      throw make_error("image ", name, ": not a JPEG, PNG or WebP file (",
                       bytes.empty() ? std::string("empty") : std::to_string(bytes.size()) + " bytes",
                       "); the accepted formats are JPEG, PNG (APNG's first frame) and WebP");
  }
  return detail::apply_orientation(std::move(decoded.image), decoded.orientation);
}

}  // namespace il::image
