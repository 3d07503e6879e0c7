#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "ops/activation.h"
#include "ops/moe.h"

namespace il::ops {

void check_router(const RouterArgs& a, const char* what) {
  check(a.x.data && a.w && a.ids && a.weights, what, ": null operand");
  check(a.experts > 0 && a.top_k > 0 && a.top_k <= a.experts, what, ": top_k ", a.top_k, " outside 1..", a.experts,
        " experts");
  check(a.x.ld >= a.cols && a.ld_ids >= a.top_k && a.ld_weights >= a.top_k, what,
        ": row stride smaller than the row");
}

void check_moe(const MoeArgs& a, const char* what) {
  check(a.x.data && a.ids && a.weights && a.gate_up.data && a.down.data && a.out.data, what, ": null operand");
  check(a.experts > 0 && a.top_k > 0 && a.top_k <= a.experts && a.inner > 0, what, ": top_k ", a.top_k,
        " outside 1..", a.experts, " experts (inner ", a.inner, ")");
  check(a.x.ld >= a.cols && a.out.ld >= a.out_cols && a.ld_ids >= a.top_k && a.ld_weights >= a.top_k, what,
        ": row stride smaller than the row");
  const DType t = a.x.dtype;
  check(a.gate_up.dtype == t && a.down.dtype == t && a.out.dtype == t, what,
        ": activations and expert weights differ in element type");
}

void router_cpu(const RouterArgs& a, ThreadPool& pool) {
  check_router(a);
  const float* x = f32_data(a.x, "router");
  pool.parallel_for(a.rows, 4, [&](std::size_t r0, std::size_t r1) {
    std::vector<float> p(a.experts);
    std::vector<std::size_t> order(a.experts);
    for (std::size_t r = r0; r < r1; ++r) {
      const float* xr = x + r * a.x.ld;
      float mx = -INFINITY;
      for (std::size_t e = 0; e < a.experts; ++e) {
        const float* we = a.w + e * a.cols;
        float dot = 0.0f;
        for (std::size_t c = 0; c < a.cols; ++c) dot += xr[c] * we[c];
        p[e] = dot;
        mx = std::max(mx, dot);
      }
      float sum = 0.0f;
      for (float& v : p) sum += (v = std::exp(v - mx));
      for (float& v : p) v /= sum;
      // torch.topk: descending; equal probabilities keep the lower index first.
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(a.top_k), order.end(),
                        [&](std::size_t i, std::size_t j) { return p[i] > p[j] || (p[i] == p[j] && i < j); });
      float chosen = 0.0f;
      for (std::size_t j = 0; j < a.top_k; ++j) chosen += p[order[j]];
      if (!a.renormalize) chosen = 1.0f;
      for (std::size_t j = 0; j < a.top_k; ++j) {
        const std::size_t e = order[j];
        a.ids[r * a.ld_ids + j] = static_cast<int32_t>(e);
        a.weights[r * a.ld_weights + j] = p[e] / chosen * (a.expert_scale ? a.expert_scale[e] : 1.0f) * a.scale;
      }
    }
  });
}

void moe_cpu(const MoeArgs& a, ThreadPool& pool) {
  check_moe(a);
  const float* x = f32_data(a.x, "moe");
  const float* gate_up = f32_data(a.gate_up, "moe");
  const float* down = f32_data(a.down, "moe");
  float* out = f32_data(a.out, "moe");
  const std::size_t I = a.inner;
  pool.parallel_for(a.rows, 1, [&](std::size_t r0, std::size_t r1) {
    std::vector<float> gu(2 * I), act(I), acc(a.out_cols);
    for (std::size_t r = r0; r < r1; ++r) {
      const float* xr = x + r * a.x.ld;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (std::size_t j = 0; j < a.top_k; ++j) {
        const int32_t id = a.ids[r * a.ld_ids + j];
        check(id >= 0 && static_cast<std::size_t>(id) < a.experts, "moe: expert id ", id, " outside 0..",
              a.experts - 1);
        const std::size_t e = static_cast<std::size_t>(id);
        const float* wgu = gate_up + e * 2 * I * a.cols;
        for (std::size_t i = 0; i < 2 * I; ++i) {
          const float* wr = wgu + i * a.cols;
          float dot = 0.0f;
          for (std::size_t c = 0; c < a.cols; ++c) dot += xr[c] * wr[c];
          gu[i] = dot;
        }
        for (std::size_t i = 0; i < I; ++i) act[i] = apply_activation(a.act, gu[i]) * gu[I + i];
        const float* wd = down + e * a.out_cols * I;
        const float w = a.weights[r * a.ld_weights + j];
        for (std::size_t o = 0; o < a.out_cols; ++o) {
          const float* wr = wd + o * I;
          float dot = 0.0f;
          for (std::size_t i = 0; i < I; ++i) dot += act[i] * wr[i];
          acc[o] += w * dot;
        }
      }
      std::copy(acc.begin(), acc.end(), out + r * a.out.ld);
    }
  });
}

std::size_t moe_workspace_bytes(std::size_t rows, std::size_t cols, std::size_t out_cols, std::size_t experts,
                                std::size_t top_k, std::size_t inner, std::size_t elem_bytes) {
  // The CUDA op's regions, in its order (ops/moe_cuda.cu, carve): the sorted pair list and its
  // inverse, row and row-tile offsets per expert (plus one each), the GLU rows (stride rounded up
  // to 8 elements, in the activations' type) and the down GEMM's rows per pair in f32, each
  // region rounded up to 256 bytes. The gate_up output never exists: the GLU is that GEMM's
  // epilogue, and the input rows are gathered as the GEMM loads them.
  const auto up = [](std::size_t b) { return (b + 255) / 256 * 256; };
  const std::size_t pairs = rows * top_k, ld_h = (inner + 7) / 8 * 8;
  (void)cols;
  return 2 * up(pairs * sizeof(int32_t)) + 2 * up((experts + 1) * sizeof(int32_t)) + up(pairs * ld_h * elem_bytes) +
         up(pairs * out_cols * sizeof(float));
}

}  // namespace il::ops
