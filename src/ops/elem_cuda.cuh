// Element types of the CUDA kernels: activations are stored as f32, f16 or bf16 and every kernel
// loads them into f32, computes in f32 and rounds once on the store (round to nearest even).
// `dispatch` turns the run-time DType of a launch into the kernel's template parameter.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"

namespace il::ops::elem {

__device__ __forceinline__ float load(const float* p) { return *p; }
__device__ __forceinline__ float load(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }

__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

// 16-byte vectors: kVec<T> elements move in one load or store instruction (4 f32 or 8 f16 /
// bf16), which is what lets the memory-bound kernels approach the device's bandwidth. The
// vector paths need 16-byte aligned addresses: `vectorizable` checks a strided row window.
template <typename T>
inline constexpr int kVec = 16 / static_cast<int>(sizeof(T));

template <typename T>
__device__ __forceinline__ void load_vec(const T* p, float (&v)[kVec<T>]) {
  union {
    uint4 raw;
    T e[kVec<T>];
  } u;
  u.raw = *reinterpret_cast<const uint4*>(p);
#pragma unroll
  for (int i = 0; i < kVec<T>; ++i) v[i] = load(&u.e[i]);
}

template <typename T>
__device__ __forceinline__ void store_vec(T* p, const float (&v)[kVec<T>]) {
  union {
    uint4 raw;
    T e[kVec<T>];
  } u;
#pragma unroll
  for (int i = 0; i < kVec<T>; ++i) store(&u.e[i], v[i]);
  *reinterpret_cast<uint4*>(p) = u.raw;
}

// True when rows of `cols` elements at `base` with stride `ld` split into aligned vectors.
template <typename T>
inline bool vectorizable(const void* base, std::size_t ld, std::size_t cols) {
  return reinterpret_cast<std::uintptr_t>(base) % 16 == 0 && ld % kVec<T> == 0 && cols % kVec<T> == 0;
}

// Calls f(T{}) with T the element type of `t` (float, __half or __nv_bfloat16).
template <typename F>
void dispatch(DType t, F&& f) {
  switch (t) {
    case DType::kF32: return f(float{});
    case DType::kF16: return f(__half{});
    case DType::kBF16: return f(__nv_bfloat16{});
  }
  throw Error("CUDA kernel: unknown element type");
}

}  // namespace il::ops::elem
