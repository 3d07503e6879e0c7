// AVX2 tile: 6 rows × 16 columns in 12 ymm accumulators, run once per half of the 32-column
// panel (B rows are read with the panel's 32-float stride). Built with -mavx2 -mfma (see
// CMakeLists.txt); includes nothing but intrinsics (gemm_kernel.h says why).
#include "ops/gemm_kernel.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

namespace il::ops::gemm_kernel {
namespace {

constexpr int kMr = 6;

// Columns [col, col + 16) of the tile, `cols` of them valid (1 … 16). Partial tiles go through
// a small stack buffer so loads and stores never touch memory past the last column.
template <int R, bool Packed>
void half(const Tile& t, std::size_t col, std::size_t cols) {
  const bool full = cols == 16;
  __m256 c0[R], c1[R];
  float buf[16];
  if (t.accumulate) {
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const float* src = t.c + r * t.ldc + col;
      if (!full) {
        for (std::size_t j = 0; j < 16; ++j) buf[j] = j < cols ? src[j] : 0.0f;
        src = buf;
      }
      c0[r] = _mm256_loadu_ps(src);
      c1[r] = _mm256_loadu_ps(src + 8);
    }
  } else {
    __m256 i0 = _mm256_setzero_ps(), i1 = _mm256_setzero_ps();
    if (t.init) {
      for (std::size_t j = 0; j < 16; ++j) buf[j] = j < cols ? t.init[col + j] : 0.0f;
      i0 = _mm256_loadu_ps(buf);
      i1 = _mm256_loadu_ps(buf + 8);
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      c0[r] = i0;
      c1[r] = i1;
    }
  }
  const float* a = t.a;
  const float* b = t.b + col;
  const std::size_t kc = t.kc;
  const std::size_t lda = Packed ? 1 : t.lda;  // distance between two rows' A values
  for (std::size_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(b);
    const __m256 b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 ar = _mm256_broadcast_ss(a + r * lda);
      c0[r] = _mm256_fmadd_ps(ar, b0, c0[r]);
      c1[r] = _mm256_fmadd_ps(ar, b1, c1[r]);
    }
    a += Packed ? kMr : 1;
    b += kPanel;
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    float* dst = t.c + r * t.ldc + col;
    if (full) {
      _mm256_storeu_ps(dst, c0[r]);
      _mm256_storeu_ps(dst + 8, c1[r]);
    } else {
      _mm256_storeu_ps(buf, c0[r]);
      _mm256_storeu_ps(buf + 8, c1[r]);
      for (std::size_t j = 0; j < cols; ++j) dst[j] = buf[j];
    }
  }
}

template <int R, bool Packed>
void tile(const Tile& t) {
  half<R, Packed>(t, 0, t.cols < 16 ? t.cols : 16);
  if (t.cols > 16) half<R, Packed>(t, 16, t.cols - 16);
}

template <bool Packed, int... R>
struct Table {
  static constexpr TileFn fns[] = {tile<R, Packed>...};
};

void tile_any(const Tile& t) {
  if (t.lda == 0)
    Table<true, 1, 2, 3, 4, 5, 6>::fns[t.rows - 1](t);
  else
    Table<false, 1, 2, 3, 4, 5, 6>::fns[t.rows - 1](t);
}

}  // namespace

Kernel avx2_kernel() { return {"avx2", kMr, tile_any}; }

}  // namespace il::ops::gemm_kernel

#else

namespace il::ops::gemm_kernel {
Kernel avx2_kernel() { return {"avx2", 6, nullptr}; }
}  // namespace il::ops::gemm_kernel

#endif
