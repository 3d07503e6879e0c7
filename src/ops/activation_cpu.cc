#include "ops/activation.h"

#include "core/error.h"

namespace il::ops {
namespace {

template <typename F>
inline void each(float* y, std::size_t rows, std::size_t cols, std::size_t ld, F f) {
  for (std::size_t i = 0; i < rows; ++i) {
    float* row = y + i * ld;
    for (std::size_t j = 0; j < cols; ++j) row[j] = f(row[j]);
  }
}

// The switch sits outside the loops so each inner loop is one straight vectorisable pass.
[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]] void apply_activation_rows(
    Activation act, float* y, std::size_t rows, std::size_t cols, std::size_t ld) {
  switch (act) {
    case Activation::kNone: return;
    case Activation::kGeluErf: return each(y, rows, cols, ld, gelu_erf);
    case Activation::kGeluTanh: return each(y, rows, cols, ld, gelu_tanh);
    case Activation::kSilu: return each(y, rows, cols, ld, silu);
    case Activation::kRelu: return each(y, rows, cols, ld, [](float v) { return v > 0.0f ? v : 0.0f; });
    case Activation::kTanh: return each(y, rows, cols, ld, fast_tanh);
    case Activation::kQuickGelu: return each(y, rows, cols, ld, quick_gelu);
  }
}

}  // namespace

void check_bias_activation(const BiasActivationArgs& a, const char* what) {
  check(a.y.data != nullptr || a.rows == 0, what, ": null operand");
  check(!a.bias.data || a.bias.dtype == a.y.dtype, what, ": bias ", dtype_name(a.bias.dtype), " and output ",
        dtype_name(a.y.dtype), " differ in element type");
  check(a.y.ld >= a.cols, what, ": row stride ", a.y.ld, " smaller than ", a.cols, " columns");
}

void bias_activation_cpu(const BiasActivationArgs& a) {
  check_bias_activation(a);
  float* const y = f32_data(a.y, "bias_activation");
  if (const float* bias = f32_data(a.bias, "bias_activation"))
    for (std::size_t r = 0; r < a.rows; ++r)
      for (std::size_t c = 0; c < a.cols; ++c) y[r * a.y.ld + c] += bias[c];
  apply_activation_rows(a.act, y, a.rows, a.cols, a.y.ld);
}

}  // namespace il::ops
