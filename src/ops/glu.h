// Gated linear unit over the output of one GEMM that computed a gated MLP's two projections
// side by side: out[r, j] = act(x[r, j]) · x[r, n + j] for j < n (the gate's columns first, then
// the up projection's, as Qwen3 / LFM2 / ModernBERT / nomic-bert checkpoints are fused at load).
#pragma once

#include <cstddef>

#include "core/thread_pool.h"
#include "inferencelayer/types.h"

namespace il::ops {

struct GluArgs {
  const float* x = nullptr;  // [rows, 2n] (row stride ldx)
  std::size_t ldx = 0;
  float* out = nullptr;      // [rows, n]; may not overlap x unless it is x itself
  std::size_t ldo = 0;
  std::size_t rows = 0, n = 0;
  Activation act = Activation::kSilu;
};

void check_glu(const GluArgs& a, const char* what = "glu");
void glu_cpu(const GluArgs& a, ThreadPool& pool);

}  // namespace il::ops
