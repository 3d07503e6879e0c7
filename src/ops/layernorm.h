// out = norm(x + residual) · w + b, one row at a time. LayerNorm centres on the mean; RMSNorm
// (rms = true) does not and has no bias. `out` may alias x or residual (rows are read first).
#pragma once

#include <cstddef>

#include "core/thread_pool.h"

namespace il::ops {

struct LayerNormArgs {
  const float* x = nullptr;
  std::size_t ldx = 0;
  const float* residual = nullptr;  // optional, added before normalising
  std::size_t ldr = 0;
  const float* w = nullptr;         // [cols]
  const float* b = nullptr;         // [cols] or null
  float* out = nullptr;
  std::size_t ldo = 0;
  std::size_t rows = 0, cols = 0;
  float eps = 1e-12f;
  bool rms = false;
};

void layernorm_cpu(const LayerNormArgs& a, ThreadPool& pool);

}  // namespace il::ops
