// Portable tile for CPUs without AVX2 (and non-x86 builds): 4 rows × 32 columns of plain loops
// the compiler vectorises for the baseline instruction set.
#include "ops/gemm_kernel.h"

namespace il::ops::gemm_kernel {
namespace {

constexpr std::size_t kMr = 4;

void tile_any(const Tile& t) {
  // A tile of at most 16 columns may start mid-panel: read only those 16 floats of each B row.
  const std::size_t width = t.cols <= 16 ? 16 : kPanel;
  float acc[kMr][kPanel];
  for (std::size_t r = 0; r < t.rows; ++r)
    for (std::size_t j = 0; j < width; ++j)
      acc[r][j] = j >= t.cols ? 0.0f
                  : t.accumulate ? t.c[r * t.ldc + j]
                  : t.init ? t.init[j]
                  : 0.0f;
  const float* a = t.a;
  const float* b = t.b;
  const std::size_t lda = t.lda == 0 ? 1 : t.lda;  // distance between two rows' A values
  for (std::size_t k = 0; k < t.kc; ++k) {
    for (std::size_t r = 0; r < t.rows; ++r) {
      const float ar = a[r * lda];
      for (std::size_t j = 0; j < width; ++j) acc[r][j] += ar * b[j];
    }
    a += t.lda == 0 ? kMr : 1;
    b += kPanel;
  }
  for (std::size_t r = 0; r < t.rows; ++r)
    for (std::size_t j = 0; j < t.cols; ++j) t.c[r * t.ldc + j] = acc[r][j];
}

}  // namespace

Kernel generic_kernel() { return {"generic", kMr, tile_any}; }

}  // namespace il::ops::gemm_kernel
