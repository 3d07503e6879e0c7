#include "png_test_reader.h"

#include <png.h>

#include <cstring>

#include "core/error.h"

namespace il::image::test {

RgbImage read_png_rgb(const std::filesystem::path& file) {
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  check(png_image_begin_read_from_file(&png, file.string().c_str()) != 0, file.string(), ": ", png.message);
  // The fixtures are 8-bit RGB without gamma or colour-profile chunks, so asking for RGB gives
  // the stored bytes unchanged.
  png.format = PNG_FORMAT_RGB;
  RgbImage image;
  image.width = png.width;
  image.height = png.height;
  image.pixels.resize(PNG_IMAGE_SIZE(png));
  const bool ok = png_image_finish_read(&png, nullptr, image.pixels.data(), 0, nullptr) != 0;
  if (!ok) {
    const std::string message = png.message;
    png_image_free(&png);
    throw make_error(file.string(), ": ", message);
  }
  return image;
}

}  // namespace il::image::test
