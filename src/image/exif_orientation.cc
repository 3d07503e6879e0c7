#include "image/exif_orientation.h"

#include <cmath>
#include <cstring>
#include <utility>

namespace il::image::detail {
namespace {

std::span<const std::uint8_t> strip_exif_prefix(std::span<const std::uint8_t> exif) {
  static constexpr std::uint8_t prefix[6] = {'E', 'x', 'i', 'f', 0, 0};
  if (exif.size() >= 6 && std::memcmp(exif.data(), prefix, 6) == 0) return exif.subspan(6);
  return exif;
}

// A bounds-checked reader of the TIFF block in its byte order.
struct TiffReader {
  std::span<const std::uint8_t> data;
  bool big_endian = false;

  bool has(std::uint64_t offset, std::uint64_t size) const { return offset <= data.size() && size <= data.size() - offset; }
  std::uint64_t uint(std::uint64_t offset, int size) const {
    std::uint64_t v = 0;
    for (int i = 0; i < size; ++i) {
      const std::uint64_t byte = data[offset + (big_endian ? i : size - 1 - i)];
      v = (v << 8) | byte;
    }
    return v;
  }
};

// Bytes per value of each TIFF type Pillow's ImageFileDirectory_v2 loads; 0 for a type it skips.
int unit_size(std::uint32_t type) {
  switch (type) {
    case 1: case 2: case 6: case 7: return 1;   // BYTE, ASCII, SBYTE, UNDEFINED
    case 3: case 8: return 2;                   // SHORT, SSHORT
    case 4: case 9: case 11: case 13: return 4; // LONG, SLONG, FLOAT, IFD
    case 5: case 10: case 12: case 16: return 8;  // RATIONAL, SRATIONAL, DOUBLE, LONG8
    default: return 0;
  }
}

// What exif_transpose's dict lookup makes of the tag's first value: the whole number it equals
// (Python's int, float and Fraction hash and compare equal when equal), else 0. BYTE, ASCII and
// UNDEFINED values are bytes or text in Pillow and never equal a number.
std::int64_t first_value(const TiffReader& r, std::uint32_t type, std::uint64_t at) {
  switch (type) {
    case 3: return static_cast<std::int64_t>(r.uint(at, 2));
    case 4: case 13: return static_cast<std::int64_t>(r.uint(at, 4));
    case 16: {
      const std::uint64_t v = r.uint(at, 8);
      return v > 8 ? 0 : static_cast<std::int64_t>(v);
    }
    case 6: return static_cast<std::int8_t>(r.uint(at, 1));
    case 8: return static_cast<std::int16_t>(r.uint(at, 2));
    case 9: return static_cast<std::int32_t>(r.uint(at, 4));
    case 5: case 10: {
      std::int64_t num = static_cast<std::int64_t>(r.uint(at, 4));
      std::int64_t den = static_cast<std::int64_t>(r.uint(at + 4, 4));
      if (type == 10) {
        num = static_cast<std::int32_t>(num);
        den = static_cast<std::int32_t>(den);
      }
      if (den == 0 || num % den != 0) return 0;
      return num / den;
    }
    case 11: case 12: {
      double v;
      if (type == 11) {
        const auto bits = static_cast<std::uint32_t>(r.uint(at, 4));
        float f;
        std::memcpy(&f, &bits, 4);
        v = f;
      } else {
        const std::uint64_t bits = r.uint(at, 8);
        std::memcpy(&v, &bits, 8);
      }
      if (!std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 1e9) return 0;
      return static_cast<std::int64_t>(v);
    }
    default: return 0;
  }
}

}  // namespace

bool exif_is_tiff(std::span<const std::uint8_t> exif) {
  const auto d = strip_exif_prefix(exif);
  if (d.empty()) return true;  // Pillow treats an empty block as no EXIF at all
  // Pillow's TIFF header: a byte-order mark and the IFD0 offset (a shorter one is a struct.error)
  if (d.size() < 8) return false;
  return (d[0] == 'I' && d[1] == 'I' && d[2] == 0x2A && d[3] == 0) ||
         (d[0] == 'M' && d[1] == 'M' && d[2] == 0 && d[3] == 0x2A);
}

std::optional<std::int64_t> exif_orientation(std::span<const std::uint8_t> exif) {
  const auto d = strip_exif_prefix(exif);
  if (d.size() < 8 || !exif_is_tiff(exif)) return std::nullopt;
  TiffReader r{d, d[0] == 'M'};
  const std::uint64_t ifd = r.uint(4, 4);
  // Pillow reads the entries one by one and keeps those read when one cannot be (a short read of
  // the entry or of its out-of-line data ends the directory); a repeated tag's last entry wins.
  if (!r.has(ifd, 2)) return std::nullopt;
  const std::uint64_t count = r.uint(ifd, 2);
  std::optional<std::int64_t> orientation;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t entry = ifd + 2 + 12 * i;
    if (!r.has(entry, 12)) break;
    const auto tag = static_cast<std::uint32_t>(r.uint(entry, 2));
    const auto type = static_cast<std::uint32_t>(r.uint(entry + 2, 2));
    const std::uint64_t values = r.uint(entry + 4, 4);
    const int unit = unit_size(type);
    if (unit == 0) continue;
    const std::uint64_t size = values * static_cast<std::uint64_t>(unit);
    std::uint64_t at = entry + 8;
    if (size > 4) {
      at = r.uint(entry + 8, 4);
      if (!r.has(at, size)) break;  // Pillow's "Truncated File Read" ends the directory
    }
    if (size == 0) continue;  // no data: Pillow skips the entry
    if (tag == 0x0112) orientation = first_value(r, type, at);
  }
  return orientation;
}

std::optional<std::int64_t> xmp_orientation(std::string_view xmp) {
  static constexpr std::string_view key = "tiff:Orientation";
  for (std::size_t pos = xmp.find(key); pos != std::string_view::npos; pos = xmp.find(key, pos + 1)) {
    std::size_t p = pos + key.size();
    if (p < xmp.size() && xmp[p] == '>') {
      p += 1;
    } else if (p + 1 < xmp.size() && xmp[p] == '=' && xmp[p + 1] == '"') {
      p += 2;
    } else {
      continue;
    }
    if (p < xmp.size() && xmp[p] >= '0' && xmp[p] <= '9') return xmp[p] - '0';
  }
  return std::nullopt;
}

RgbImage apply_orientation(RgbImage image, std::int64_t orientation) {
  if (orientation < 2 || orientation > 8) return image;
  const std::size_t w = image.width, h = image.height;
  const bool swap = orientation >= 5;  // TRANSPOSE, ROTATE_270, TRANSVERSE, ROTATE_90
  RgbImage out;
  out.width = swap ? h : w;
  out.height = swap ? w : h;
  out.pixels.resize(image.pixels.size());
  for (std::size_t y = 0; y < out.height; ++y) {
    std::uint8_t* dst = out.pixels.data() + y * out.width * 3;
    for (std::size_t x = 0; x < out.width; ++x, dst += 3) {
      // The source pixel of output (x, y) for each of PIL's Image.Transpose methods.
      std::size_t sx = 0, sy = 0;
      switch (orientation) {
        case 2: sx = w - 1 - x; sy = y; break;           // FLIP_LEFT_RIGHT
        case 3: sx = w - 1 - x; sy = h - 1 - y; break;   // ROTATE_180
        case 4: sx = x; sy = h - 1 - y; break;           // FLIP_TOP_BOTTOM
        case 5: sx = y; sy = x; break;                   // TRANSPOSE
        case 6: sx = y; sy = h - 1 - x; break;           // ROTATE_270 (clockwise quarter turn)
        case 7: sx = w - 1 - y; sy = h - 1 - x; break;   // TRANSVERSE
        case 8: sx = w - 1 - y; sy = x; break;           // ROTATE_90 (counter-clockwise)
      }
      std::memcpy(dst, image.at(sx, sy), 3);
    }
  }
  return out;
}

}  // namespace il::image::detail

#include "core/error.h"

namespace il::image::detail {

std::int64_t file_orientation(std::span<const std::uint8_t> exif, bool has_exif, std::string_view xmp,
                              std::string_view name) {
  std::optional<std::int64_t> orientation;
  if (has_exif) {
    check(exif_is_tiff(exif), "image ", name, ": its EXIF block is not TIFF data (PIL's exif_transpose refuses it)");
    orientation = exif_orientation(exif);
  }
  if (!orientation && !xmp.empty()) orientation = xmp_orientation(xmp);
  return orientation.value_or(1);
}

}  // namespace il::image::detail
