// Reading the preprocessing tests' PNG fixtures with libpng's simplified API. Kept apart from the
// tests so that they can switch to image/decode.h (the project's decoder) once it lands.
#pragma once

#include <filesystem>

#include "image/rgb_image.h"

namespace il::image::test {

// An 8-bit RGB image from a PNG file; throws il::Error when it cannot be read.
RgbImage read_png_rgb(const std::filesystem::path& file);

}  // namespace il::image::test
