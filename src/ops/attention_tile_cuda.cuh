// Device pieces the tensor-core attention kernels share (ops/attention_half_cuda.cu on mma.sync,
// ops/attention_wgmma_cuda.cu and ops/attention_tma_cuda.cu on wgmma): the element type's pair
// rounding, ones and exponentials, the f32 exponential of the online softmax, cp.async staging,
// and for the two wgmma kernels the key ranges, masking, row maxima and stores of a warpgroup's
// 64 rows in the accumulator layout.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

#include "ops/attention_mask_cuda.cuh"
#include "ops/mma_cuda.cuh"

namespace il::ops::attn {

// log2(e): the kernels run the softmax on exp2, with the scale multiplied by it.
inline constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float fast_exp2(float x) {
  // ex2.approx: ~2 ulp in f32, far below the f16/bf16 rounding of P; exp2(−inf) = +0.
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// The element type's instructions: the mma, the f32 → element rounding of a pair and of one value,
// and the exponential of a pair.
template <typename T>
struct Elem;

template <>
struct Elem<__half> {
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);  // .x (lo) in the low 16 bits: the lower column
    uint32_t r;
    memcpy(&r, &h, sizeof r);
    return r;
  }
  static constexpr uint32_t kOnePair = 0x3c003c00u;  // (1, 1)
  // (exp2(lo), exp2(hi)) as a pair: arguments rounded to f16, then ex2.approx.f16x2 (sm_75+).
  static __device__ __forceinline__ uint32_t exp2_pair(float lo, float hi) {
    const uint32_t x = pack(lo, hi);
    uint32_t y;
    asm("ex2.approx.f16x2 %0, %1;\n" : "=r"(y) : "r"(x));
    return y;
  }
  static __device__ __forceinline__ uint16_t one(float x) {
    const __half h = __float2half_rn(x);
    uint16_t r;
    memcpy(&r, &h, sizeof r);
    return r;
  }
  static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    tc::mma_m16n8k16<__half>(c, a, b0, b1);
  }
};

template <>
struct Elem<__nv_bfloat16> {
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    uint32_t r;
    memcpy(&r, &h, sizeof r);
    return r;
  }
  static constexpr uint32_t kOnePair = 0x3f803f80u;  // (1, 1)
  // (exp2(lo), exp2(hi)) as a pair: on sm_90 arguments rounded to bf16, then
  // ex2.approx.ftz.bf16x2; before sm_90 (no bf16 ex2) two f32 exponentials, rounded.
  static __device__ __forceinline__ uint32_t exp2_pair(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const uint32_t x = pack(lo, hi);
    uint32_t y;
    asm("ex2.approx.ftz.bf16x2 %0, %1;\n" : "=r"(y) : "r"(x));
    return y;
#else
    return pack(fast_exp2(lo), fast_exp2(hi));
#endif
  }
  static __device__ __forceinline__ uint16_t one(float x) {
    const __nv_bfloat16 h = __float2bfloat16_rn(x);
    uint16_t r;
    memcpy(&r, &h, sizeof r);
    return r;
  }
  static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    tc::mma_m16n8k16<__nv_bfloat16>(c, a, b0, b1);
  }
};

// 16 bytes global → shared, bypassing L1; src_bytes 0 writes zeros (rows past the sequence).
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
  const int n = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// --- A warpgroup's 64 query rows in the wgmma accumulator layout: s[4j + 2h + e] (and o, the
// same) is row 16 warp + lane / 4 + 8h of the warpgroup, column 8j + 2 (lane % 4) + e.

// The keys the warpgroup's rows (from wr0) may see, and this thread's two rows'.
struct RowKeys {
  bool active;  // some row of the warpgroup lies inside the sequence
  int wlo = 0, whi = 0;              // the union of the rows' ranges
  int wlo_last = 0, whi_first = 0;   // the intersection (the bounds grow with the row)
  int lo[2], hi[2];                  // rows wr0 + 16 warp + g (+ 8)
  // Whether keys [kt, kt + n) are admissible for every row (no mask needed), or for some row.
  __device__ __forceinline__ bool covers(int kt, int n) const { return kt >= wlo_last && kt + n <= whi_first; }
  __device__ __forceinline__ bool sees(int kt, int n) const { return active && kt < whi && kt + n > wlo; }
};

template <typename Params>
__device__ __forceinline__ RowKeys row_keys(const Params& p, int wr0, int len, int warp, int g) {
  RowKeys k;
  k.active = wr0 < len;
  if (k.active) {
    key_range(p, wr0, len, k.wlo, k.whi_first);
    key_range(p, min(wr0 + 64, len) - 1, len, k.wlo_last, k.whi);
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) key_range(p, wr0 + 16 * warp + 8 * h + g, len, k.lo[h], k.hi[h]);
  return k;
}

// Scores of J chunks of 8 keys from key kt: those outside this thread's rows' ranges become −inf.
template <int J>
__device__ __forceinline__ void mask_scores(float (&s)[4 * J], int kt, int tig, const RowKeys& k) {
#pragma unroll
  for (int j = 0; j < J; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key = kt + 8 * j + 2 * tig + (e & 1);
      if (key < k.lo[e >> 1] || key >= k.hi[e >> 1]) s[4 * j + e] = -INFINITY;
    }
}

// The maximum of row h's raw scores over the tile, across the four lanes that hold the row: a
// short tree instead of one dependent chain.
template <int J>
__device__ __forceinline__ float row_max(const float (&s)[4 * J], int h) {
  static_assert(J == 8 || J == 16, "64- or 128-key tiles");
  float mx[J / 2];
#pragma unroll
  for (int q = 0; q < J / 2; ++q)
    mx[q] = fmaxf(fmaxf(s[8 * q + 2 * h], s[8 * q + 2 * h + 1]), fmaxf(s[8 * q + 4 + 2 * h], s[8 * q + 5 + 2 * h]));
  if constexpr (J == 16) {
#pragma unroll
    for (int q = 0; q < 4; ++q) mx[q] = fmaxf(mx[q], mx[q + 4]);
  }
  float r = fmaxf(fmaxf(mx[0], mx[1]), fmaxf(mx[2], mx[3]));
  r = fmaxf(r, __shfl_xor_sync(0xffffffffu, r, 1));
  return fmaxf(r, __shfl_xor_sync(0xffffffffu, r, 2));
}

// O / the row sums, rounded, to this thread's two rows: `out` points at the first one's head
// columns, rows_left counts the sequence's rows from it (a row past the sequence is not written).
template <typename T>
__device__ __forceinline__ void store_rows(const float (&o)[32], const float (&l)[4], uint16_t* out, std::size_t ldo,
                                           int rows_left, int tig) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (8 * h >= rows_left) continue;
    const float sum = l[2 * h];
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;  // every real row sees itself: sum > 0
    uint16_t* row = out + static_cast<std::size_t>(8 * h) * ldo;
#pragma unroll
    for (int j = 0; j < 8; ++j)
      *reinterpret_cast<uint32_t*>(row + 8 * j + 2 * tig) = Elem<T>::pack(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv);
  }
}

}  // namespace il::ops::attn
