// Scalar activations shared by the CPU ops (the CUDA kernels carry their own device copies), and
// the bias + activation epilogue of a GEMM as an op of its own.
#pragma once

#include <cmath>
#include <cstddef>

#include "inferencelayer/types.h"
#include "ops/tensor_view.h"
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

inline float quick_gelu(float v) { return v / (1.0f + fast_exp(-1.702f * v)); }

inline float apply_activation(Activation act, float v) {
  switch (act) {
    case Activation::kNone: return v;
    case Activation::kGeluErf: return gelu_erf(v);
    case Activation::kGeluTanh: return gelu_tanh(v);
    case Activation::kSilu: return silu(v);
    case Activation::kRelu: return v > 0.0f ? v : 0.0f;
    case Activation::kTanh: return fast_tanh(v);
    case Activation::kQuickGelu: return quick_gelu(v);
  }
  return v;
}

// y[r, c] = act(y[r, c] + bias[c]) over rows × cols, in place: the GEMM epilogue (the CPU GEMM
// applies it to each tile it finishes; on CUDA it runs where cuBLASLt's epilogue does not).
struct BiasActivationArgs {
  TensorView y;
  ConstTensorView bias;  // [cols] in y's element type, or absent
  std::size_t rows = 0, cols = 0;
  Activation act = Activation::kNone;
};

// The checks both backends make: y present, bias of y's type, stride.
void check_bias_activation(const BiasActivationArgs& a, const char* what = "bias_activation");
// f32 operands only. The activation pass is one straight vectorisable loop per row.
void bias_activation_cpu(const BiasActivationArgs& a);

}  // namespace il::ops
