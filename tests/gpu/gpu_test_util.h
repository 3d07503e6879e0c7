// Helpers for the gpu tests: the skip that says why, device arrays, and CPU-vs-CUDA comparison.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "ops/check_cuda.h"

namespace il::test {

// The number of usable CUDA devices; 0 without a driver or a GPU (never throws).
inline int gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

inline std::string no_gpu_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  cudaGetLastError();
  return e == cudaSuccess ? "no CUDA device is present"
                          : std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")";
}

// Every gpu test starts with this: without a GPU it skips, and the skip message says why.
#define IL_REQUIRE_GPU()                                                                  \
  do {                                                                                    \
    if (::il::test::gpu_count() == 0) GTEST_SKIP() << "SKIPPED (gpu): " << ::il::test::no_gpu_reason(); \
  } while (0)

// A device copy of a host vector; download() brings the current contents back.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& host) : n_(host.size()) {
    void* p = nullptr;
    IL_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(1, n_) * sizeof(T)));
    ptr_ = static_cast<T*>(p);
    if (n_ > 0) IL_CUDA_CHECK(cudaMemcpy(ptr_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceArray() { cudaFree(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return ptr_; }
  std::vector<T> download() const {
    IL_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<T> host(n_);
    if (n_ > 0) IL_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* ptr_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace il::test
