// AVX-512 tile: 14 rows × 32 columns held in 28 zmm accumulators; per k step two aligned loads
// of B and one broadcast of A per row feed 28 FMAs. Built with -mavx512f -mfma (see
// CMakeLists.txt); includes nothing but intrinsics (gemm_kernel.h says why).
#include "ops/gemm_kernel.h"

#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>

namespace il::ops::gemm_kernel {
namespace {

constexpr int kMr = 14;

__mmask16 lane_mask(std::size_t cols) {
  return cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1u);
}

// R rows × (Wide ? 32 : 16) columns. The narrow form serves tiles of at most 16 columns and
// reads only the first 16 floats of each B row (one cache line), so two threads can share a
// panel's halves without reading each other's lines.
template <int R, bool Wide, bool Packed>
void tile(const Tile& t) {
  const __mmask16 m0 = lane_mask(t.cols);
  const __mmask16 m1 = t.cols > 16 ? lane_mask(t.cols - 16) : __mmask16(0);
  __m512 c0[R], c1[R];
  if (t.accumulate) {
#pragma GCC unroll 14
    for (int r = 0; r < R; ++r) {
      c0[r] = _mm512_maskz_loadu_ps(m0, t.c + r * t.ldc);
      if (Wide) c1[r] = _mm512_maskz_loadu_ps(m1, t.c + r * t.ldc + 16);
    }
  } else {
    const __m512 i0 = t.init ? _mm512_maskz_loadu_ps(m0, t.init) : _mm512_setzero_ps();
    const __m512 i1 = t.init && Wide ? _mm512_maskz_loadu_ps(m1, t.init + 16) : _mm512_setzero_ps();
#pragma GCC unroll 14
    for (int r = 0; r < R; ++r) {
      c0[r] = i0;
      if (Wide) c1[r] = i1;
    }
  }
  const float* a = t.a;
  const float* b = t.b;
  const std::size_t kc = t.kc;
  const std::size_t lda = Packed ? 1 : t.lda;  // distance between two rows' A values
  // Without a next block the prefetches re-touch this tile's own B rows (cached: no traffic).
  const char* pf = reinterpret_cast<const char*>(t.prefetch ? t.prefetch : t.b);
  const std::size_t pf_second = t.prefetch && t.prefetch_wide ? 64 : 0;
  const std::size_t pf_every = t.prefetch_every ? t.prefetch_every : 1;
  std::size_t pf_countdown = pf_every;
  for (std::size_t k = 0; k < kc; ++k) {
    if (--pf_countdown == 0) {
      _mm_prefetch(pf, _MM_HINT_T1);
      _mm_prefetch(pf + pf_second, _MM_HINT_T1);
      pf += kPanel * sizeof(float);
      pf_countdown = pf_every;
    }
    const __m512 b0 = _mm512_load_ps(b);
    const __m512 b1 = Wide ? _mm512_load_ps(b + 16) : b0;
#pragma GCC unroll 14
    for (int r = 0; r < R; ++r) {
      const __m512 ar = _mm512_set1_ps(a[r * lda]);
      c0[r] = _mm512_fmadd_ps(ar, b0, c0[r]);
      if (Wide) c1[r] = _mm512_fmadd_ps(ar, b1, c1[r]);
    }
    a += Packed ? kMr : 1;
    b += kPanel;
  }
#pragma GCC unroll 14
  for (int r = 0; r < R; ++r) {
    _mm512_mask_storeu_ps(t.c + r * t.ldc, m0, c0[r]);
    if (Wide) _mm512_mask_storeu_ps(t.c + r * t.ldc + 16, m1, c1[r]);
  }
}

template <bool Wide, bool Packed, int... R>
struct Table {
  static constexpr TileFn fns[] = {tile<R, Wide, Packed>...};
};

template <bool Packed>
void tile_as(const Tile& t) {
  if (t.cols > 16)
    Table<true, Packed, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14>::fns[t.rows - 1](t);
  else
    Table<false, Packed, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14>::fns[t.rows - 1](t);
}

void tile_any(const Tile& t) { t.lda == 0 ? tile_as<true>(t) : tile_as<false>(t); }

}  // namespace

Kernel avx512_kernel() { return {"avx512", kMr, tile_any}; }

}  // namespace il::ops::gemm_kernel

#else

namespace il::ops::gemm_kernel {
Kernel avx512_kernel() { return {"avx512", 14, nullptr}; }
}  // namespace il::ops::gemm_kernel

#endif
