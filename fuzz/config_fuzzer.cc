// config.json: each input is written as <scratch>/config.json, read the way a model folder's is,
// and checked by the architecture its model_type names (models/registry: every architecture's
// config parser). Accepted or refused with il::Error; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "fuzz_files.h"
#include "io/json_util.h"
#include "models/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  il::fuzz::write_file("config.json", std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    const auto file = il::fuzz::scratch_dir() / "config.json";
    const nlohmann::json config = il::io::read_json_file(file);
    il::models::find_architecture(config, file.string()).check_config(config, file.string());
  } catch (const il::Error&) {
  }
  return 0;
}
