// libFuzzer entry point for the safetensors header validator (see fuzz/README.md). Every input
// must be accepted or refused with il::Error; the sanitizers catch the rest.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "io/safetensors_format.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)il::io::detail::parse_safetensors(data, size, "fuzz");
  } catch (const il::Error&) {
  }
  return 0;
}
