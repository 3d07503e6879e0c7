// Owning handles for device and pinned host memory: freed on destruction, never copied. The
// executor allocates everything through these at construction (pinned readback grows on demand).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "ops/check_cuda.h"

namespace il::cuda {

namespace detail {

inline cudaError_t device_alloc(void** p, std::size_t bytes) { return cudaMalloc(p, bytes); }
inline cudaError_t pinned_alloc(void** p, std::size_t bytes) { return cudaMallocHost(p, bytes); }

// One allocation of `bytes` through Alloc, released through Free (whose error cannot be acted on
// in a destructor, so it is ignored).
template <cudaError_t (*Alloc)(void**, std::size_t), cudaError_t (*Free)(void*)>
class CudaAllocation {
 public:
  CudaAllocation() = default;
  explicit CudaAllocation(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) IL_CUDA_CHECK(Alloc(&ptr_, bytes));
  }
  ~CudaAllocation() { reset(); }
  CudaAllocation(CudaAllocation&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  CudaAllocation& operator=(CudaAllocation&& o) noexcept {
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
    if (ptr_) Free(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace detail

using DeviceMemory = detail::CudaAllocation<detail::device_alloc, cudaFree>;
using PinnedMemory = detail::CudaAllocation<detail::pinned_alloc, cudaFreeHost>;

// Carves 256-byte-aligned pieces out of one allocation (cuBLASLt's preferred alignment).
inline std::size_t aligned_bytes(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace il::cuda
