#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "ops/activation.h"
#include "ops/gemm.h"

namespace il::ops {

void check_gemm(const GemmArgs& a) {
  check(a.x && a.w && a.y, "gemm: null operand");
  check(a.ldx >= a.k && a.ldy >= a.n, "gemm: row stride smaller than the row (ldx ", a.ldx,
        " k ", a.k, " ldy ", a.ldy, " n ", a.n, ")");
}

void gemm_cpu(const GemmArgs& a, ThreadPool& pool) {
  check_gemm(a);
  if (a.m == 0 || a.n == 0) return;
  // Broadcast the bias into y first and let BLAS accumulate onto it (beta = 1): one pass fewer.
  float beta = 0.0f;
  if (a.bias) {
    for (std::size_t i = 0; i < a.m; ++i) std::memcpy(a.y + i * a.ldy, a.bias, a.n * sizeof(float));
    beta = 1.0f;
  }
  if (a.k == 0) {
    if (!a.bias)
      for (std::size_t i = 0; i < a.m; ++i) std::fill_n(a.y + i * a.ldy, a.n, 0.0f);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(a.m),
                static_cast<int>(a.n), static_cast<int>(a.k), 1.0f, a.x, static_cast<int>(a.ldx),
                a.w, static_cast<int>(a.k), beta, a.y, static_cast<int>(a.ldy));
  }
  if (a.act == Activation::kNone) return;
  const std::size_t grain = std::max<std::size_t>(1, 16384 / a.n);
  pool.parallel_for(a.m, grain, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      float* row = a.y + r * a.ldy;
      for (std::size_t j = 0; j < a.n; ++j) row[j] = apply_activation(a.act, row[j]);
    }
  });
}

}  // namespace il::ops
