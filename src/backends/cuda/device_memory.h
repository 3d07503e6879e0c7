// Owning handles for device and pinned host memory: freed on destruction, never copied. The
// executor allocates everything through these at construction (pinned readback grows on demand).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "ops/check_cuda.h"

namespace il::cuda {

class DeviceMemory {
 public:
  DeviceMemory() = default;
  explicit DeviceMemory(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) IL_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  }
  ~DeviceMemory() { reset(); }
  DeviceMemory(DeviceMemory&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceMemory& operator=(DeviceMemory&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  std::byte* get() const { return static_cast<std::byte*>(ptr_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void reset() {
    if (ptr_) cudaFree(ptr_);  // errors here cannot be acted on (destructor)
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

class PinnedMemory {
 public:
  PinnedMemory() = default;
  explicit PinnedMemory(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) IL_CUDA_CHECK(cudaMallocHost(&ptr_, bytes));
  }
  ~PinnedMemory() { reset(); }
  PinnedMemory(PinnedMemory&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedMemory& operator=(PinnedMemory&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  std::byte* get() const { return static_cast<std::byte*>(ptr_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void reset() {
    if (ptr_) cudaFreeHost(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Carves 256-byte-aligned pieces out of one allocation (cuBLASLt's preferred alignment).
inline std::size_t aligned_bytes(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace il::cuda
