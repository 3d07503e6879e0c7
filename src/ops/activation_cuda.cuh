// The activations of ops/activation.h on the device, in f32, for the GEMM epilogues.
// GELU is the exact erf form or the tanh approximation, as the model's config says: cuBLASLt's
// GELU epilogue is the tanh approximation, so erf-GELU models never use it. Values stored in
// f16 / bf16 take the cheaper exact-GELU evaluation of ops/gelu_erf_fast.h; f32 keeps erff.
#pragma once

#include <cmath>
#include <type_traits>

#include "inferencelayer/types.h"
#include "ops/gelu_erf_fast.h"

namespace il::ops::act {

__device__ __forceinline__ float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

__device__ __forceinline__ float gelu_tanh(float v) {
  float a = 0.7978845608028654f * (v + 0.044715f * v * v * v);
  a = fminf(20.0f, fmaxf(-20.0f, a));  // as the CPU op: tanh is ±1 well before ±20
  return 0.5f * v * (1.0f + tanhf(a));
}

template <Activation A>
__device__ __forceinline__ float activate(float v) {
  if constexpr (A == Activation::kNone) return v;
  if constexpr (A == Activation::kGeluErf) return gelu_erf(v);
  if constexpr (A == Activation::kGeluTanh) return gelu_tanh(v);
  if constexpr (A == Activation::kSilu) return v / (1.0f + expf(-v));
  if constexpr (A == Activation::kRelu) return v > 0.0f ? v : 0.0f;
  if constexpr (A == Activation::kTanh) return tanhf(v);
  if constexpr (A == Activation::kQuickGelu) return v / (1.0f + expf(-1.702f * v));
  return v;
}

// The activation for values stored as T (computed in f32 either way).
template <Activation A, typename T>
__device__ __forceinline__ float activate_for(float v) {
  if constexpr (A == Activation::kGeluErf && !std::is_same_v<T, float>) return gelu_fast::gelu_erf(v);
  return activate<A>(v);
}

}  // namespace il::ops::act
