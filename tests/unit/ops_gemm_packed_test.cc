// The packed GEMM, every kernel this CPU runs, against a double reference: odd sizes that leave
// partial panels (n % 32), partial micro-panels (m % mr), several depth passes (k > 256) and
// several row blocks (m > 128), short batches cut into row groups, with strided x and y.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <utility>
#include <string>

#include "ops/gemm_packed.h"
#include "reference.h"

namespace il::test {
namespace {

struct PackedCase {
  std::size_t m, n, k;
  Activation act;
  bool bias;
};

std::string case_name(const PackedCase& c) {
  return std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k);
}

void expect_matches_reference(const PackedCase& c, const std::string& kernel, std::size_t threads) {
  ThreadPool pool(threads);
  const std::size_t ldx = c.k + 3, ldy = c.n + 5;
  auto x = random_vector(c.m * ldx, 11);
  auto w = random_vector(c.n * c.k, 12, 1.0f / std::sqrt(static_cast<float>(c.k)));
  auto b = random_vector(c.n, 13);
  const ops::PackedWeight packed(w.data(), c.n, c.k);
  std::vector<float> y(c.m * ldy, 7.0f);
  ops::gemm_packed_cpu({ops::f32_view(x.data(), ldx), &packed, ops::f32_view(c.bias ? b.data() : nullptr),
                        ops::f32_view(y.data(), ldy), c.m, c.act},
                       pool, kernel);
  for (std::size_t i = 0; i < c.m; ++i) {
    for (std::size_t j = 0; j < c.n; ++j) {
      double acc = c.bias ? b[j] : 0.0;
      for (std::size_t t = 0; t < c.k; ++t) acc += static_cast<double>(x[i * ldx + t]) * w[j * c.k + t];
      ASSERT_NEAR(y[i * ldy + j], activation_ref(c.act, acc), 1e-4)
          << kernel << " " << case_name(c) << " at " << i << "," << j;
    }
    for (std::size_t j = c.n; j < ldy; ++j) ASSERT_EQ(y[i * ldy + j], 7.0f) << "wrote past the row";
  }
}

TEST(GemmPacked, GenericKernelIsAlwaysAvailable) {
  const auto kernels = ops::gemm_packed_kernels();
  ASSERT_FALSE(kernels.empty());
  EXPECT_EQ(kernels.back(), "generic");
  std::string all;
  for (const auto& k : kernels) all += k + " ";
  std::printf("packed GEMM kernels on this CPU: %s(default %s)\n", all.c_str(),
              ops::gemm_packed_default_kernel().c_str());
}

TEST(GemmPacked, EveryKernelMatchesDoubleReference) {
  const Activation acts[] = {Activation::kNone, Activation::kGeluErf, Activation::kGeluTanh,
                             Activation::kSilu, Activation::kRelu, Activation::kTanh, Activation::kQuickGelu};
  std::vector<PackedCase> cases;
  std::size_t i = 0;
  for (std::size_t m : {1, 2, 7, 15, 29, 130, 257})
    for (std::size_t n : {1, 31, 33, 97})
      for (std::size_t k : {1, 7, 257, 600}) cases.push_back({m, n, k, acts[i++ % 6], i % 2 == 0});
  cases.push_back({64, 768, 768, Activation::kGeluErf, true});
  for (const auto& kernel : ops::gemm_packed_kernels()) {
    for (const auto& c : cases) {
      expect_matches_reference(c, kernel, 1);
      if (c.m * c.n * c.k > 100000) expect_matches_reference(c, kernel, 3);
    }
  }
}

// A short batch on many threads: whole-panel tasks claimed dynamically, the rows cut into
// groups (61 rows → 3 groups of 21, 45 → 2 of 23) and spread unevenly over the row tiles.
TEST(GemmPacked, ShortBatchRowGroupsMatchDoubleReference) {
  for (const auto& kernel : ops::gemm_packed_kernels()) {
    expect_matches_reference({61, 97, 300, Activation::kGeluErf, true}, kernel, 16);
    expect_matches_reference({45, 65, 260, Activation::kNone, false}, kernel, 16);
    expect_matches_reference({64, 768, 96, Activation::kNone, true}, kernel, 16);
  }
}

// How the work is cut (one thread, static shares, dynamic panel tasks with row groups) must not
// change a single bit: each output is the same sum in the same order, whoever computes it. The
// CUDA engine's parity tests and batch invariance lean on that.
TEST(GemmPacked, ThreadCountDoesNotChangeTheBits) {
  const std::pair<std::size_t, std::size_t> nk[] = {{768, 768}, {97, 300}, {2304, 64}};
  for (std::size_t m : {16, 45, 64, 200}) {
    for (const auto& [n, k] : nk) {
      const auto x = random_vector(m * k, 21);
      const auto w = random_vector(n * k, 22, 1.0f / std::sqrt(static_cast<float>(k)));
      const auto b = random_vector(n, 23);
      const ops::PackedWeight packed(w.data(), n, k);
      std::vector<float> first;
      for (std::size_t threads : {1, 3, 16}) {
        ThreadPool pool(threads);
        std::vector<float> y(m * n);
        ops::gemm_packed_cpu({ops::f32_view(x.data(), k), &packed, ops::f32_view(b.data()),
                              ops::f32_view(y.data(), n), m, Activation::kGeluErf},
                             pool);
        if (first.empty()) {
          first = y;
          continue;
        }
        ASSERT_EQ(0, std::memcmp(first.data(), y.data(), y.size() * sizeof(float)))
            << m << "x" << n << "x" << k << " on " << threads << " threads";
      }
    }
  }
}

TEST(GemmPacked, ZeroDepthGivesBias) {
  const ops::PackedWeight packed(nullptr, 3, 0);
  std::vector<float> x(2, 1.0f), b = {1.0f, 2.0f, 3.0f}, y(6, 9.0f);
  ThreadPool pool(1);
  ops::gemm_packed_cpu(
      {ops::f32_view(x.data(), 1), &packed, ops::f32_view(b.data()), ops::f32_view(y.data(), 3), 2, Activation::kNone},
      pool);
  EXPECT_EQ(y, (std::vector<float>{1, 2, 3, 1, 2, 3}));
}

TEST(GemmPacked, UnknownKernelIsRefused) {
  const ops::PackedWeight packed(nullptr, 1, 0);
  std::vector<float> x(1), y(1);
  ThreadPool pool(1);
  EXPECT_THROW(
      ops::gemm_packed_cpu({ops::f32_view(x.data(), 1), &packed, {}, ops::f32_view(y.data(), 1), 1}, pool, "sse9"),
      std::exception);
}

}  // namespace
}  // namespace il::test
