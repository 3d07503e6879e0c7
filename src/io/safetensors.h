// Read-only access to the tensors of a model folder: one `model.safetensors`, or the shards named
// by `model.safetensors.index.json`. Files are memory-mapped; a tensor's bytes are read only when
// asked for, and converted to f32 then. Every header is validated when the file is opened, and
// every failure names the file and the tensor.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace il::io {

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::filesystem::path file;  // the shard that holds it
  std::size_t numel() const;
};

class SafeTensors {
 public:
  // `path` is a folder (model.safetensors or model.safetensors.index.json inside) or one
  // .safetensors file. Throws il::Error naming the file and what is wrong.
  static SafeTensors open(const std::filesystem::path& path);

  SafeTensors(SafeTensors&&) noexcept;
  SafeTensors& operator=(SafeTensors&&) noexcept;
  ~SafeTensors();

  bool has(std::string_view name) const;
  // Throws il::Error naming the tensor (and the files searched) when absent.
  const TensorInfo& info(std::string_view name) const;
  std::vector<std::string> names() const;  // sorted

  // The tensor converted to f32 (F32 / F16 / BF16 sources). The overload with a shape checks it
  // and throws naming file, tensor, expected and actual shape on mismatch.
  std::vector<float> load_f32(std::string_view name) const;
  std::vector<float> load_f32(std::string_view name, const std::vector<int64_t>& expected_shape) const;

  // The tensor's bytes as stored (info(name).dtype, little-endian, possibly unaligned), inside the
  // mapped file: valid while this object lives. The shape is checked as load_f32 checks it.
  const std::uint8_t* bytes(std::string_view name, const std::vector<int64_t>& expected_shape) const;

  // Total bytes of tensor data across all files, and the dtype most tensors are stored in.
  std::size_t total_bytes() const;
  DType dominant_dtype() const;

 private:
  struct Impl;
  explicit SafeTensors(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace il::io
