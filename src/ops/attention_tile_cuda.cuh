// Device pieces the two tensor-core attention kernels share (ops/attention_half_cuda.cu on
// mma.sync, ops/attention_wgmma_cuda.cu on wgmma): the element type's pair rounding, ones and
// exponentials, the f32 exponential of the online softmax, and cp.async staging.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

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

}  // namespace il::ops::attn
