// Test helpers: a temporary folder, file writers and a tiny safetensors writer, so every io test
// builds its own inputs.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.h"

namespace il::io::test {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "il_io_test_XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& rel) const { return path_ / rel; }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::filesystem::create_directories(path.parent_path());
  // A fresh file rather than a truncated one: ext4 flushes truncated-and-rewritten files on close
  // (auto_da_alloc), which made the fuzz loops wait on the disk.
  std::error_code ec;
  std::filesystem::remove(path, ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

inline void write_json(const std::filesystem::path& path, const nlohmann::json& j) { write_file(path, j.dump(2)); }

// One tensor for the writer: dtype as spelled in the file and the raw little-endian bytes.
struct RawTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

template <typename T>
std::string to_bytes(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

inline RawTensor f32_tensor(std::string name, std::vector<int64_t> shape, const std::vector<float>& v) {
  return {std::move(name), "F32", std::move(shape), to_bytes(v)};
}

// The 8-byte length prefix, the header text padded with spaces to `pad_to` bytes (0 = no
// padding), then the data section.
inline std::string assemble(const std::string& header, const std::string& data, std::size_t pad_to = 0) {
  std::string h = header;
  if (h.size() < pad_to) h.append(pad_to - h.size(), ' ');
  std::string out(8, '\0');
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + h + data;
}

// A well-formed file with tensors laid out back to back in the given order.
inline std::string build_safetensors(const std::vector<RawTensor>& tensors, std::size_t pad_to = 0,
                                     const nlohmann::json& metadata = nullptr) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.is_null()) header["__metadata__"] = metadata;
  std::string data;
  for (const auto& t : tensors) {
    header[t.name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  return assemble(header.dump(), data, pad_to);
}

// Runs `fn`, expects il::Error, and returns its message.
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const il::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected il::Error";
  return {};
}

}  // namespace il::io::test
