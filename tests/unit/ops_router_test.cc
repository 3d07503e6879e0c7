// The CPU router (ops/moe.h) against a double-precision reading of its contract: softmax over the
// experts' logits, the top-k by probability, weights renormalised or not, times the per-expert
// and the common scale.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "ops/moe.h"
#include "ops/tensor_view.h"

namespace il {
namespace {

struct Want {
  std::vector<int32_t> ids;
  std::vector<double> weights;
};

Want reference(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& expert_scale,
               std::size_t cols, std::size_t experts, std::size_t top_k, bool renormalize, double scale) {
  std::vector<double> p(experts);
  double mx = -INFINITY;
  for (std::size_t e = 0; e < experts; ++e) {
    double dot = 0.0;
    for (std::size_t c = 0; c < cols; ++c) dot += static_cast<double>(x[c]) * w[e * cols + c];
    p[e] = dot;
    mx = std::max(mx, dot);
  }
  double sum = 0.0;
  for (double& v : p) sum += (v = std::exp(v - mx));
  for (double& v : p) v /= sum;
  std::vector<std::size_t> order(experts);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return p[i] > p[j]; });
  double chosen = 0.0;
  for (std::size_t j = 0; j < top_k; ++j) chosen += p[order[j]];
  Want out;
  for (std::size_t j = 0; j < top_k; ++j) {
    const std::size_t e = order[j];
    out.ids.push_back(static_cast<int32_t>(e));
    out.weights.push_back(p[e] / (renormalize ? chosen : 1.0) * expert_scale[e] * scale);
  }
  return out;
}

class RouterCpu : public ::testing::TestWithParam<bool> {};

TEST_P(RouterCpu, FollowsTheContract) {
  const bool renormalize = GetParam();
  const std::size_t rows = 9, cols = 33, experts = 12, top_k = 4;
  std::mt19937 rng(17);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> su(0.5f, 1.5f);
  std::vector<float> x(rows * cols), w(experts * cols), expert_scale(experts);
  for (float& v : x) v = nd(rng);
  for (float& v : w) v = nd(rng) / std::sqrt(static_cast<float>(cols));
  for (float& v : expert_scale) v = su(rng);
  std::vector<int32_t> ids(rows * top_k, -1);
  std::vector<float> weights(rows * top_k, 0.0f);
  ops::RouterArgs a;
  a.x = ops::f32_view(x.data(), cols);
  a.w = w.data();
  a.expert_scale = expert_scale.data();
  a.ids = ids.data();
  a.ld_ids = top_k;
  a.weights = weights.data();
  a.ld_weights = top_k;
  a.rows = rows;
  a.cols = cols;
  a.experts = experts;
  a.top_k = top_k;
  a.renormalize = renormalize;
  a.scale = 2.5f;
  ThreadPool pool(2);
  ops::router_cpu(a, pool);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::vector<float> xr(x.begin() + static_cast<std::ptrdiff_t>(r * cols),
                                x.begin() + static_cast<std::ptrdiff_t>((r + 1) * cols));
    const Want want = reference(xr, w, expert_scale, cols, experts, top_k, renormalize, 2.5);
    double total = 0.0;
    for (std::size_t j = 0; j < top_k; ++j) {
      EXPECT_EQ(ids[r * top_k + j], want.ids[j]) << "row " << r << " slot " << j;
      EXPECT_NEAR(weights[r * top_k + j], want.weights[j], 1e-5 * std::abs(want.weights[j]) + 1e-7)
          << "row " << r << " slot " << j;
      total += weights[r * top_k + j] / expert_scale[static_cast<std::size_t>(ids[r * top_k + j])];
    }
    // Renormalised weights over the chosen experts sum to the scale; the raw probabilities less.
    if (renormalize)
      EXPECT_NEAR(total, 2.5, 1e-5) << "row " << r;
    else
      EXPECT_LT(total, 2.5 - 1e-3) << "row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Renormalize, RouterCpu, ::testing::Values(true, false));

}  // namespace
}  // namespace il
