// config.json: each input is written as <scratch>/config.json and loaded the way a model folder
// is (io::load_encoder_config). Accepted or refused with il::Error; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "fuzz_files.h"
#include "io/hf_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  il::fuzz::write_file("config.json", std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    (void)il::io::load_encoder_config(il::fuzz::scratch_dir());
  } catch (const il::Error&) {
  }
  return 0;
}
