// y[m, n] = act(x[m, k] · W[n, k]ᵀ + bias[n]). W keeps the Hugging Face [out, in] layout.
// Row strides allow x and y to be column windows of wider buffers (packed QKV).
#pragma once

#include <cstddef>

#include "core/thread_pool.h"
#include "inferencelayer/types.h"

namespace il::ops {

struct GemmArgs {
  const float* x = nullptr;
  std::size_t ldx = 0;
  const float* w = nullptr;     // [n, k], row stride k
  const float* bias = nullptr;  // [n] or null
  float* y = nullptr;
  std::size_t ldy = 0;
  std::size_t m = 0, n = 0, k = 0;
  Activation act = Activation::kNone;
};

void check_gemm(const GemmArgs& a);  // throws il::Error on inconsistent dims
void gemm_cpu(const GemmArgs& a, ThreadPool& pool);

}  // namespace il::ops
