// Internal: the safetensors on-disk format (8-byte little-endian header length, JSON header, data
// section) and a read-only memory map. Split from safetensors.cc so the header validator can be
// fuzzed on bytes in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace il::io::detail {

// Headers larger than this are refused (the reference implementation uses the same bound).
inline constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

struct HeaderEntry {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::uint64_t begin = 0;  // absolute byte offsets in the file, end inside it
  std::uint64_t end = 0;
};

// Validates a whole safetensors file held in memory and returns its tensors. `label` names the
// file in every message. Throws il::Error; never reads outside [data, data + size).
std::vector<HeaderEntry> parse_safetensors(const std::uint8_t* data, std::size_t size, const std::string& label);

// A read-only private mapping of a whole file; empty files are not mapped.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path);  // throws il::Error naming the file
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void release();

  std::filesystem::path path_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace il::io::detail
