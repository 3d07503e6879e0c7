#include <gtest/gtest.h>

#include "ops/gemm.h"
#include "reference.h"

namespace il::test {
namespace {

// y = act(x Wᵀ + b) in double, with the same strides the op gets.
std::vector<float> gemm_ref(const std::vector<float>& x, std::size_t ldx, const std::vector<float>& w,
                            const float* bias, std::size_t m, std::size_t n, std::size_t k,
                            Activation act, std::size_t ldy) {
  std::vector<float> y(m * ldy, 0.0f);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double acc = bias ? bias[j] : 0.0;
      for (std::size_t t = 0; t < k; ++t) acc += static_cast<double>(x[i * ldx + t]) * w[j * k + t];
      y[i * ldy + j] = static_cast<float>(activation_ref(act, acc));
    }
  return y;
}

struct GemmCase {
  std::size_t m, n, k;
  Activation act;
  bool bias;
};

class GemmTest : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmTest, MatchesDoubleReference) {
  const auto c = GetParam();
  ThreadPool pool(3);
  // Strided operands: x and y are windows of wider buffers, as packed QKV views are.
  const std::size_t ldx = c.k + 3, ldy = c.n + 5;
  auto x = random_vector(c.m * ldx, 1);
  auto w = random_vector(c.n * c.k, 2, 1.0f / std::sqrt(static_cast<float>(c.k)));
  auto b = random_vector(c.n, 3);
  std::vector<float> y(c.m * ldy, 7.0f);
  ops::gemm_cpu({x.data(), ldx, w.data(), c.bias ? b.data() : nullptr, y.data(), ldy, c.m, c.n, c.k, c.act},
                pool);
  auto ref = gemm_ref(x, ldx, w, c.bias ? b.data() : nullptr, c.m, c.n, c.k, c.act, ldy);
  // Compare only the written window; the padding columns must be untouched.
  for (std::size_t i = 0; i < c.m; ++i) {
    for (std::size_t j = 0; j < c.n; ++j) ASSERT_NEAR(y[i * ldy + j], ref[i * ldy + j], 1e-4) << i << "," << j;
    for (std::size_t j = c.n; j < ldy; ++j) ASSERT_EQ(y[i * ldy + j], 7.0f);
  }
}

std::vector<GemmCase> cases() {
  std::vector<GemmCase> out;
  const Activation acts[] = {Activation::kNone, Activation::kGeluErf, Activation::kGeluTanh,
                             Activation::kSilu, Activation::kRelu, Activation::kTanh};
  std::size_t i = 0;
  for (std::size_t m : kOddSizes)
    for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{97}})
      for (std::size_t k : {std::size_t{1}, std::size_t{7}, std::size_t{257}})
        out.push_back({m, n, k, acts[i++ % 6], i % 2 == 0});
  for (Activation a : acts) out.push_back({97, 257, 97, a, true});
  return out;
}

INSTANTIATE_TEST_SUITE_P(OddSizes, GemmTest, ::testing::ValuesIn(cases()));

TEST(Gemm, RejectsStrideSmallerThanRow) {
  ThreadPool pool(1);
  std::vector<float> x(8), w(8), y(8);
  EXPECT_THROW(ops::gemm_cpu({x.data(), 1, w.data(), nullptr, y.data(), 4, 2, 2, 2}, pool), std::exception);
}

}  // namespace
}  // namespace il::test
