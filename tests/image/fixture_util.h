// Shared helpers of the image tests: where the fixtures are, and the FNV-1a hash the fixture
// generator (tools/oracle/make_preprocess_fixtures.py) records for large arrays.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace il::image::test {

inline std::filesystem::path fixture_dir() {
  const char* root = std::getenv("IL_SOURCE_DIR");
  return std::filesystem::path(root ? root : IL_IMAGE_SOURCE_DIR) / "tests/fixtures/images/preprocess";
}

inline nlohmann::json read_fixture_json(const std::string& name) {
  std::ifstream in(fixture_dir() / name);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

inline std::string fnv1a64(const void* data, std::size_t size) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001B3ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace il::image::test
