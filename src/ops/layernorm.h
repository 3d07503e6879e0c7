// out = norm(x + residual) · w + b, one row at a time. LayerNorm centres on the mean; RMSNorm
// (rms = true) does not and has no bias. sum_out, when set, also receives x + residual (a
// pre-norm model's residual stream). group > 0 normalises each run of `group` columns of a row on
// its own, all with the same `group` weights (per-head q / k norms); 0 means the whole row.
// `out` and `sum_out` may alias x or residual (rows are read first).
#pragma once

#include <cstddef>

#include "core/thread_pool.h"
#include "ops/tensor_view.h"

namespace il::ops {

struct LayerNormArgs {
  ConstTensorView x;
  ConstTensorView residual;  // optional (data null), added before normalising
  // [cols] (or [group]): f32 in every precision (they scale a normalised f32 value).
  const float* w = nullptr;
  const float* b = nullptr;  // or null
  TensorView out;
  std::size_t rows = 0, cols = 0;
  float eps = 1e-12f;
  bool rms = false;
  TensorView sum_out;  // optional (data null): x + residual
  std::size_t group = 0;  // 0 = cols
  // The sum (x + residual, or x alone) is multiplied by it (f32) before it is normalised and
  // before sum_out stores it.
  float sum_scale = 1.0f;
};

// The checks shared by both backends: operands present, x, residual, out and sum_out of one
// element type, group divides cols, sum_out only with a residual. `what` names the step in the
// messages.
void check_layernorm(const LayerNormArgs& a, const char* what = "layernorm");

// f32 operands only.
void layernorm_cpu(const LayerNormArgs& a, ThreadPool& pool);

}  // namespace il::ops
