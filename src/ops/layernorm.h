// out = norm(x + residual) · w + b, one row at a time. LayerNorm centres on the mean; RMSNorm
// (rms = true) does not and has no bias. sum_out, when set, also receives x + residual (a
// pre-norm model's residual stream). group > 0 normalises each run of `group` columns of a row on
// its own, all with the same `group` weights (per-head q / k norms); 0 means the whole row.
// `out` and `sum_out` may alias x or residual (rows are read first).
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
  float* sum_out = nullptr;         // optional: x + residual
  std::size_t lds = 0;
  std::size_t group = 0;            // 0 = cols
};

// The checks shared by both backends: operands present, group divides cols, sum_out only with a
// residual. `what` names the step in the messages.
void check_layernorm(const LayerNormArgs& a, const char* what = "layernorm");

void layernorm_cpu(const LayerNormArgs& a, ThreadPool& pool);

}  // namespace il::ops
