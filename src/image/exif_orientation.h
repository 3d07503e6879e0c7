// The orientation PIL's Image.getexif() finds, and ImageOps.exif_transpose's transposition of it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "image/rgb_image.h"

namespace il::image::detail {

// The Orientation tag (0x0112) of IFD0 of an EXIF block (a TIFF file, optionally after the
// "Exif\0\0" prefix JPEG's APP1 carries), read as Pillow's TiffImagePlugin reads it: the tag's
// first value; nullopt when IFD0 has no such tag, 0 when it has one PIL's exif_transpose does not
// take (a byte string, text, a fraction that is not whole), which also stops the XMP fallback.
// Throws nothing: a block that is not TIFF is the caller's to judge (see exif_is_tiff).
std::optional<std::int64_t> exif_orientation(std::span<const std::uint8_t> exif);

// Whether the block (after an optional "Exif\0\0") is empty or starts with an 8-byte TIFF header
// (byte order, 42, IFD0 offset); Pillow raises on any other, so load_image fails on such a file.
bool exif_is_tiff(std::span<const std::uint8_t> exif);

// The orientation of an XMP packet: the first `tiff:Orientation="D` or `tiff:Orientation>D`
// (one digit), Pillow's fallback when the EXIF has no Orientation.
std::optional<std::int64_t> xmp_orientation(std::string_view xmp);

// The image transposed as exif_transpose does for an orientation (2..8; others unchanged).
RgbImage apply_orientation(RgbImage image, std::int64_t orientation);

}  // namespace il::image::detail

namespace il::image::detail {

// The orientation exif_transpose applies to an image whose file carries `exif` (empty: none) and
// `xmp` (empty: none), as Image.getexif() finds it: the EXIF tag, else the XMP packet's, else 1.
// Throws il::Error naming `name` when the EXIF block is not TIFF, where Pillow raises.
std::int64_t file_orientation(std::span<const std::uint8_t> exif, bool has_exif, std::string_view xmp,
                              std::string_view name);

}  // namespace il::image::detail
