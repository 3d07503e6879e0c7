// Element types of the CUDA kernels: activations are stored as f32, f16 or bf16 and every kernel
// loads them into f32, computes in f32 and rounds once on the store (round to nearest even).
// `dispatch` turns the run-time DType of a launch into the kernel's template parameter.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/dtype.h"
#include "core/error.h"

namespace il::ops::elem {

__device__ __forceinline__ float load(const float* p) { return *p; }
__device__ __forceinline__ float load(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }

__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

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
