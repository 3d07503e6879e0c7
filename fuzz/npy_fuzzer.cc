// libFuzzer entry point for the NumPy .npy parser (io/npy.h: the {"npy": "file.npy"} arrays of
// JSON lines; see fuzz/README.md). Every input must be accepted or refused with il::Error; the
// sanitizers catch the rest.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)il::io::parse_npy(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const il::Error&) {
  }
  return 0;
}
