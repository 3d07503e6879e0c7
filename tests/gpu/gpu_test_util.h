// Helpers for the gpu tests: the skip that says why, device arrays, and CPU-vs-CUDA comparison.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

#include "ops/attention.h"
#include "ops/attention_dispatch_cuda.h"
#include "ops/check_cuda.h"
#include "ops/tensor_view.h"

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

// Sets an environment variable for the scope (executors read their switches when built) and
// restores what was there before.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      unsetenv(name_.c_str());
    } else {
      setenv(name_.c_str(), old_.c_str(), 1);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
};

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

// Largest |got − want| divided by the scale of `want` (its largest magnitude, at least 1). A NaN
// or infinity on either side is an infinite error: std::max would silently skip a NaN.
inline double rel_error(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double diff = 0.0, scale = 1.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(want[i])) return INFINITY;
    diff = std::max(diff, std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  return diff / scale;
}

// Largest |a − b| over n values, infinite when either holds a NaN or infinity.
inline double max_abs_finite(const float* a, const float* b, std::size_t n) {
  double m = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
    m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  return m;
}

// Ragged batches: the seq_starts of sequences of these lengths, and the longest of them.
inline std::vector<int32_t> starts_of(const std::vector<int32_t>& lengths) {
  std::vector<int32_t> s = {0};
  for (int32_t l : lengths) s.push_back(s.back() + l);
  return s;
}

inline std::size_t longest(const std::vector<int32_t>& lengths) {
  int32_t m = 0;
  for (int32_t l : lengths) m = std::max(m, l);
  return static_cast<std::size_t>(m);
}

// An attention case of the parity tests: a ragged batch and the head layout and mask.
struct AttnCase {
  std::vector<int32_t> lengths;
  std::size_t heads, kv_heads, head_dim;
  ops::MaskMode mask;
  std::size_t window;
};

inline std::ostream& operator<<(std::ostream& os, const AttnCase& c) {
  os << c.lengths.size() << " seqs (longest " << longest(c.lengths) << "), heads " << c.heads << "/" << c.kv_heads
     << ", head_dim " << c.head_dim << (c.mask == ops::MaskMode::kCausal ? ", causal" : ", bidirectional")
     << ", window " << c.window;
  return os;
}

// The CUDA attention's arguments for q, k, v and out given as views of one element type.
inline ops::AttentionCudaArgs attention_args(ops::ConstTensorView q, ops::ConstTensorView k, ops::ConstTensorView v,
                                             ops::TensorView out, const int32_t* seq_starts, std::size_t num_seqs,
                                             std::size_t heads, std::size_t kv_heads, std::size_t head_dim, float scale,
                                             ops::MaskMode mask, std::size_t window, std::size_t max_seq_len,
                                             ops::AttentionQueries queries = ops::AttentionQueries::kAll) {
  EXPECT_TRUE(q.dtype == out.dtype && k.dtype == out.dtype && v.dtype == out.dtype) << "attention: mixed types";
  ops::AttentionCudaArgs a;
  a.q = q.data;
  a.ldq = q.ld;
  a.k = k.data;
  a.ldk = k.ld;
  a.v = v.data;
  a.ldv = v.ld;
  a.out = out.data;
  a.ldo = out.ld;
  a.seq_starts = seq_starts;
  a.num_seqs = num_seqs;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.head_dim = head_dim;
  a.scale = scale;
  a.mask = mask;
  a.window = window;
  a.type = out.dtype;
  a.queries = queries;
  a.max_seq_len = max_seq_len;
  return a;
}

// For the timing tests (not checks): the median of 20 CUDA-event timed runs of `launch` on the
// default stream, after 3 untimed ones, in ms.
template <typename Launch>
double median_ms(Launch&& launch) {
  cudaEvent_t e0, e1;
  IL_CUDA_CHECK(cudaEventCreate(&e0));
  IL_CUDA_CHECK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i) launch();
  std::vector<float> ms;
  for (int i = 0; i < 20; ++i) {
    IL_CUDA_CHECK(cudaEventRecord(e0));
    launch();
    IL_CUDA_CHECK(cudaEventRecord(e1));
    IL_CUDA_CHECK(cudaEventSynchronize(e1));
    float m = 0;
    IL_CUDA_CHECK(cudaEventElapsedTime(&m, e0, e1));
    ms.push_back(m);
  }
  IL_CUDA_CHECK(cudaEventDestroy(e0));
  IL_CUDA_CHECK(cudaEventDestroy(e1));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Lengths 0 … 1000 in one batch: empty, single-token and tile-straddling sequences together.
inline const std::vector<int32_t> kMixedLengths = {1, 7, 1000, 0, 33, 2, 257, 97, 64, 65, 31, 500};

}  // namespace il::test
