#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "ops/layernorm.h"

namespace il::ops {
namespace {

// Independent partial sums, so the double-precision sums vectorise and enough vector add chains
// run at once to hide their latency (8 lanes left a 768-column row latency-bound). The order is
// fixed per lane, so a row's result does not depend on its batch.
constexpr std::size_t kLanes = 32;

// One row: v = x (+ residual), then (v − mean) / sqrt(var + eps) · w (+ b), or the RMS form.
// Mean and variance are two passes summed in double (long rows keep f32 parity with the double
// reference), each in kLanes lanes so the sums vectorise. Built for AVX-512 and AVX2 as well as
// the baseline, chosen at load time.
// n = cols, or the group width; `v` holds n values of scratch.
[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]] void normalize_row(
    const LayerNormArgs& a, std::size_t n, const float* x, const float* res, float* v, float* out, float* sum_out) {
  if (res) {
    if (a.sum_scale == 1.0f) {
      for (std::size_t j = 0; j < n; ++j) v[j] = x[j] + res[j];
    } else {
      for (std::size_t j = 0; j < n; ++j) v[j] = (x[j] + res[j]) * a.sum_scale;
    }
    if (sum_out) std::copy(v, v + n, sum_out);
  } else if (a.sum_scale != 1.0f) {
    for (std::size_t j = 0; j < n; ++j) v[j] = x[j] * a.sum_scale;
  } else {
    v = const_cast<float*>(x);  // read only below
  }
  double lane[kLanes] = {};
  std::size_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l) lane[l] += static_cast<double>(v[j + l]);
  double sum = 0.0;
  for (; j < n; ++j) sum += static_cast<double>(v[j]);
  for (double s : lane) sum += s;
  const float mean = a.rms ? 0.0f : static_cast<float>(sum / static_cast<double>(n));

  std::fill_n(lane, kLanes, 0.0);
  for (j = 0; j + kLanes <= n; j += kLanes) {
    for (std::size_t l = 0; l < kLanes; ++l) {
      const double d = v[j + l] - mean;
      lane[l] += d * d;
    }
  }
  double sq = 0.0;
  for (; j < n; ++j) {
    const double d = v[j] - mean;
    sq += d * d;
  }
  for (double s : lane) sq += s;
  const float inv = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(n) + a.eps));
  if (a.b) {
    for (j = 0; j < n; ++j) out[j] = (v[j] - mean) * inv * a.w[j] + a.b[j];
  } else {
    for (j = 0; j < n; ++j) out[j] = (v[j] - mean) * inv * a.w[j];
  }
}

}  // namespace

void check_layernorm(const LayerNormArgs& a, const char* what) {
  check(a.x.data && a.w && a.out.data, what, ": null operand");
  const DType t = a.x.dtype;
  check(a.out.dtype == t && (!a.residual.data || a.residual.dtype == t) && (!a.sum_out.data || a.sum_out.dtype == t),
        what, ": operands differ in element type");
  check(a.cols > 0, what, ": zero columns");
  check(a.group == 0 || a.cols % a.group == 0, what, ": group of ", a.group, " columns does not divide ", a.cols);
  check(!a.sum_out.data || a.residual.data, what, ": a sum output needs a residual input");
}

void layernorm_cpu(const LayerNormArgs& a, ThreadPool& pool) {
  check_layernorm(a);
  const float* const x = f32_data(a.x, "layernorm");
  const float* const residual = f32_data(a.residual, "layernorm");
  float* const out = f32_data(a.out, "layernorm");
  float* const sum_out = f32_data(a.sum_out, "layernorm");
  const std::size_t ldx = a.x.ld, ldr = a.residual.ld, ldo = a.out.ld, lds = a.sum_out.ld;
  const std::size_t group = a.group ? a.group : a.cols;
  // About 4K values per chunk (5 rows of 768): the rows were just written by every thread, so
  // spreading them wide pulls them from all caches at once; on 16 cores 4K measured faster than
  // 16K at 64 rows (docs/perf-history.md). The pool's workers spin between steps, so a chunk this
  // small does not pay for a wake-up.
  const std::size_t grain = std::max<std::size_t>(1, 4096 / a.cols);
  pool.parallel_for(a.rows, grain, [&](std::size_t r0, std::size_t r1) {
    std::vector<float> v(group);
    for (std::size_t r = r0; r < r1; ++r) {
      for (std::size_t c = 0; c < a.cols; c += group)
        normalize_row(a, group, x + r * ldx + c, residual ? residual + r * ldr + c : nullptr, v.data(),
                      out + r * ldo + c, sum_out ? sum_out + r * lds + c : nullptr);
    }
  });
}

}  // namespace il::ops
