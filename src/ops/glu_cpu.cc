#include <algorithm>

#include "core/error.h"
#include "ops/activation.h"
#include "ops/glu.h"

namespace il::ops {
namespace {

// The f32 arrays of GluArgs.
struct GluF32 {
  const float* x;
  std::size_t ldx;
  float* out;
  std::size_t ldo, n;
  Activation act;
};

template <typename F>
inline void gate_rows(const GluF32& a, std::size_t r0, std::size_t r1, F act) {
  for (std::size_t r = r0; r < r1; ++r) {
    const float* gate = a.x + r * a.ldx;
    const float* up = gate + a.n;
    float* out = a.out + r * a.ldo;
    for (std::size_t j = 0; j < a.n; ++j) out[j] = act(gate[j]) * up[j];
  }
}

// The switch sits outside the loops so each inner loop is one vectorisable pass.
[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]] void glu_rows(const GluF32& a, std::size_t r0,
                                                                                       std::size_t r1) {
  switch (a.act) {
    case Activation::kNone: return gate_rows(a, r0, r1, [](float v) { return v; });
    case Activation::kGeluErf: return gate_rows(a, r0, r1, gelu_erf);
    case Activation::kGeluTanh: return gate_rows(a, r0, r1, gelu_tanh);
    case Activation::kSilu: return gate_rows(a, r0, r1, silu);
    case Activation::kRelu: return gate_rows(a, r0, r1, [](float v) { return v > 0.0f ? v : 0.0f; });
    case Activation::kTanh: return gate_rows(a, r0, r1, fast_tanh);
    case Activation::kQuickGelu: return gate_rows(a, r0, r1, quick_gelu);
  }
}

}  // namespace

void check_glu(const GluArgs& a, const char* what) {
  check(a.x.data && a.out.data, what, ": null operand");
  check(a.x.dtype == a.out.dtype, what, ": input ", dtype_name(a.x.dtype), " and output ", dtype_name(a.out.dtype),
        " differ in element type");
  check(a.n > 0 && a.x.ld >= 2 * a.n && a.out.ld >= a.n, what, ": row strides (", a.x.ld, ", ", a.out.ld,
        ") too small for ", a.n, " gated columns");
}

void glu_cpu(const GluArgs& a, ThreadPool& pool) {
  check_glu(a);
  const GluF32 rows{f32_data(a.x, "glu"), a.x.ld, f32_data(a.out, "glu"), a.out.ld, a.n, a.act};
  const std::size_t grain = std::max<std::size_t>(1, 8192 / a.n);
  pool.parallel_for(a.rows, grain, [&](std::size_t r0, std::size_t r1) { glu_rows(rows, r0, r1); });
}

}  // namespace il::ops
