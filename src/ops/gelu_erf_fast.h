// The exact (erf) GELU, x·Φ(x), for activations stored in f16 / bf16, in about 16 f32
// instructions and two special-function calls, where erff made the pass instruction-bound.
//
// Why: the bias + GELU pass after the up-projection (bge-base 128×256: 32768 × 3072 values) was
// bound by instructions, not memory, with erff (Nsight Compute on the H200: issue slots 82 % busy,
// DRAM 50 %). The f32 mode keeps erff (ops/activation_cuda.cuh): it is the parity class, and
// twice the bytes per value leave it memory-bound anyway.
//
// The form: for t = |x|, the lower tail E(t) = Φ(−t) = exp(−t²/2) · M(t), where M(t) =
// Φ(−t)·exp(t²/2) is smooth, 1/2 at 0 and ~1/(t√(2π)) far out. With u = 1/(1 + c·t),
// M(t) ≈ u·P(u), P of degree 7; Φ(x) = 1 − E for x ≥ 0 and E for x < 0. The coefficients are a
// minimax fit in relative error on t ∈ [0, 10] (Lawson-reweighted least squares in long double
// against erfc; c = 0.3 chosen by search): the fit's relative error is below 5e-8, so the lower
// tail keeps its relative accuracy where 1 + erf(x/√2) in f32 cancels to nothing.
//
// Checked over every finite f16 and bf16 input (tests/unit/gelu_erf_fast_test.cc, CPU; the GPU
// kernel in tests/gpu): rounded to the storage type, it equals the correctly rounded GELU on all
// but a handful of f16 inputs (each one unit in the last place away; the exact value lies within
// 2e-4 of a unit of a rounding tie), fewer than the f32 erff formula PyTorch evaluates misses
// (hundreds of f16 and bf16 inputs; in the far negative tail that formula returns 0 where the
// exact bf16 value is a small nonzero number, thousands of bf16 units away).
//
// ±inf: GELU(+inf) = +inf, GELU(−inf) = NaN (−inf · 0), as x·Φ(x) in PyTorch; NaN stays NaN.
// On the device, exp2 flushes results below 2⁻¹²⁶ to zero: GELU of inputs below about −13.2 is a
// signed zero instead of a bf16 subnormal (PyTorch's formula gives zero from about −5.5 on).
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define IL_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define IL_HOST_DEVICE inline
#endif

namespace il::ops::gelu_fast {

inline constexpr float kC = 0.3f;
// P's coefficients, constant term first.
inline constexpr float kP0 = 1.196050404e-01f, kP1 = 1.211111928e-01f, kP2 = 9.775615389e-02f,
                       kP3 = 1.354961106e-01f, kP4 = -6.652383025e-02f, kP5 = 2.200845599e-01f,
                       kP6 = -1.650771544e-01f, kP7 = 3.754795190e-02f;
inline constexpr float kHalfLog2e = 0.72134752044448170f;  // log2(e) / 2: exp(−x²/2) = 2^(−x²·kHalfLog2e)

// 1 / d and 2^a: on the device the special-function unit's approximations (relative error about
// 2⁻²² each, far below the f16 / bf16 rounding); on the host the correctly rounded forms, so the
// CPU test checks the approximation itself.
IL_HOST_DEVICE float reciprocal(float d) {
#if defined(__CUDA_ARCH__)
  return __fdividef(1.0f, d);
#else
  return 1.0f / d;
#endif
}
IL_HOST_DEVICE float exp2_of(float a) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(a));
  return y;
#else
  return exp2f(a);
#endif
}

IL_HOST_DEVICE float gelu_erf(float x) {
  const float t = fabsf(x);
  const float u = reciprocal(fmaf(kC, t, 1.0f));
  float p = kP7;
  p = fmaf(p, u, kP6);
  p = fmaf(p, u, kP5);
  p = fmaf(p, u, kP4);
  p = fmaf(p, u, kP3);
  p = fmaf(p, u, kP2);
  p = fmaf(p, u, kP1);
  p = fmaf(p, u, kP0);
  const float tail = exp2_of((x * -kHalfLog2e) * x) * (p * u);  // Φ(−|x|)
  return x * (x >= 0.0f ? 1.0f - tail : tail);
}

}  // namespace il::ops::gelu_fast

#undef IL_HOST_DEVICE
