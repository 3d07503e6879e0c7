// libFuzzer target of image/decode: any bytes are decoded or refused with il::Error. Limits small
// enough that a hostile header cannot make a run slow or large: 4 MiB in, 4 M pixels out.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "image/decode.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const il::image::RgbImage image =
        il::image::decode_image(std::span<const std::uint8_t>(data, size), "fuzz", {4u << 20, 4u << 20});
    if (image.pixels.size() != image.width * image.height * 3) __builtin_trap();
  } catch (const il::Error&) {
  }
  return 0;
}
