// For fuzz targets whose loaders read files: a private folder in /dev/shm (memory, so writing the
// input costs no disk I/O), made once per process and removed at exit.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace il::fuzz {

inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    namespace fs = std::filesystem;
    const fs::path base =
        fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    fs::path d = base / ("il_fuzz_" + std::to_string(getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
  }();
  static const bool cleanup = [] {
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return true;
  }();
  (void)cleanup;
  return dir;
}

// Writes `bytes` to `rel` under the scratch folder, creating its parent folder.
inline void write_file(const std::filesystem::path& rel, std::string_view bytes) {
  const std::filesystem::path p = scratch_dir() / rel;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline void remove_file(const std::filesystem::path& rel) {
  std::error_code ec;
  std::filesystem::remove(scratch_dir() / rel, ec);
}

}  // namespace il::fuzz
