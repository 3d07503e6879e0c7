// Gated linear unit over the output of one GEMM that computed a gated MLP's two projections
// side by side: out[r, j] = act(x[r, j]) · x[r, n + j] for j < n (the gate's columns first, then
// the up projection's, as Qwen3 / LFM2 / ModernBERT / nomic-bert checkpoints are fused at load).
#pragma once

#include <cstddef>

#include "core/thread_pool.h"
#include "inferencelayer/types.h"
#include "ops/tensor_view.h"

namespace il::ops {

struct GluArgs {
  ConstTensorView x;  // [rows, 2n]
  TensorView out;     // [rows, n], x's element type; may not overlap x unless it is x itself
  std::size_t rows = 0, n = 0;
  Activation act = Activation::kSilu;
};

// The checks both backends make: operands present and of one element type, strides that fit.
void check_glu(const GluArgs& a, const char* what = "glu");
// f32 operands only.
void glu_cpu(const GluArgs& a, ThreadPool& pool);

}  // namespace il::ops
