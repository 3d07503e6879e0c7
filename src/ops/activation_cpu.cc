#include "ops/activation.h"

namespace il::ops {
namespace {

template <typename F>
inline void each(float* y, std::size_t rows, std::size_t cols, std::size_t ld, F f) {
  for (std::size_t i = 0; i < rows; ++i) {
    float* row = y + i * ld;
    for (std::size_t j = 0; j < cols; ++j) row[j] = f(row[j]);
  }
}

}  // namespace

[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]] void apply_activation_rows(
    Activation act, float* y, std::size_t rows, std::size_t cols, std::size_t ld) {
  switch (act) {
    case Activation::kNone: return;
    case Activation::kGeluErf: return each(y, rows, cols, ld, gelu_erf);
    case Activation::kGeluTanh: return each(y, rows, cols, ld, gelu_tanh);
    case Activation::kSilu: return each(y, rows, cols, ld, silu);
    case Activation::kRelu: return each(y, rows, cols, ld, [](float v) { return v > 0.0f ? v : 0.0f; });
    case Activation::kTanh: return each(y, rows, cols, ld, fast_tanh);
  }
}

}  // namespace il::ops
