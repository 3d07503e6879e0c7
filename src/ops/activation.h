// Scalar activations shared by the CPU ops (the CUDA kernels carry their own device copies).
#pragma once

#include <cmath>
#include <cstddef>

#include "inferencelayer/types.h"
#include "ops/vec_math.h"

namespace il::ops {

inline float gelu_erf(float v) { return 0.5f * v * (1.0f + fast_erf(v * 0.70710678118654752f)); }

// The tanh approximation. The argument is clamped: tanh is ±1 in f32 well before ±20, and the
// clamp keeps a fast tanh from overflowing on outliers.
inline float gelu_tanh(float v) {
  float a = 0.7978845608028654f * (v + 0.044715f * v * v * v);
  a = std::fmin(20.0f, std::fmax(-20.0f, a));
  return 0.5f * v * (1.0f + fast_tanh(a));
}

inline float silu(float v) { return v / (1.0f + fast_exp(-v)); }

inline float apply_activation(Activation act, float v) {
  switch (act) {
    case Activation::kNone: return v;
    case Activation::kGeluErf: return gelu_erf(v);
    case Activation::kGeluTanh: return gelu_tanh(v);
    case Activation::kSilu: return silu(v);
    case Activation::kRelu: return v > 0.0f ? v : 0.0f;
    case Activation::kTanh: return fast_tanh(v);
  }
  return v;
}

// Applies act to rows × cols values (row stride ld). The switch sits outside the loops so each
// inner loop is one straight vectorisable pass.
void apply_activation_rows(Activation act, float* y, std::size_t rows, std::size_t cols,
                           std::size_t ld);

}  // namespace il::ops
