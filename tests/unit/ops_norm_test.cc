#include <gtest/gtest.h>

#include <cmath>

#include "ops/activation.h"
#include "ops/embed.h"
#include "ops/glu.h"
#include "ops/layernorm.h"
#include "ops/pool.h"
#include "ops/rope.h"
#include "reference.h"

namespace il::test {
namespace {

void check_norm(std::size_t rows, std::size_t cols, bool residual, bool bias, bool rms) {
  ThreadPool pool(3);
  auto x = random_vector(rows * cols, 11, 3.0f);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] += 5.0f;  // an offset makes centring matter
  auto r = random_vector(rows * cols, 12);
  auto w = random_vector(cols, 13);
  auto b = random_vector(cols, 14);
  const float eps = 1e-5f;
  std::vector<float> out(rows * cols);
  ops::layernorm_cpu({ops::f32_view(x.data(), cols), ops::f32_view(residual ? r.data() : nullptr, cols), w.data(),
                      bias ? b.data() : nullptr, ops::f32_view(out.data(), cols), rows, cols, eps, rms},
                     pool);
  std::vector<float> ref(rows * cols);
  for (std::size_t i = 0; i < rows; ++i) {
    std::vector<double> v(cols);
    double mean = 0;
    for (std::size_t j = 0; j < cols; ++j) {
      v[j] = x[i * cols + j] + (residual ? r[i * cols + j] : 0.0);
      mean += v[j];
    }
    mean = rms ? 0.0 : mean / static_cast<double>(cols);
    double var = 0;
    for (double e : v) var += (e - mean) * (e - mean);
    var /= static_cast<double>(cols);
    for (std::size_t j = 0; j < cols; ++j)
      ref[i * cols + j] = static_cast<float>((v[j] - mean) / std::sqrt(var + eps) * w[j] + (bias ? b[j] : 0.0));
  }
  EXPECT_LE(max_abs_diff(out, ref), 1e-4 * scale_of(ref)) << rows << "x" << cols;
}

TEST(LayerNorm, MatchesDoubleReferenceAtOddSizes) {
  for (std::size_t rows : kOddSizes)
    for (std::size_t cols : {std::size_t{1}, std::size_t{7}, std::size_t{97}, std::size_t{1025}}) {
      check_norm(rows, cols, true, true, false);
      check_norm(rows, cols, false, true, false);
      check_norm(rows, cols, false, false, true);
      check_norm(rows, cols, true, false, true);
    }
}

TEST(LayerNorm, OutputMayAliasResidual) {
  ThreadPool pool(2);
  const std::size_t rows = 7, cols = 97;
  auto x = random_vector(rows * cols, 1);
  auto r = random_vector(rows * cols, 2);
  std::vector<float> w(cols, 1.0f), b(cols, 0.0f), out(rows * cols);
  ops::layernorm_cpu({ops::f32_view(x.data(), cols), ops::f32_view(r.data(), cols), w.data(), b.data(),
                      ops::f32_view(out.data(), cols), rows, cols, 1e-12f, false},
                     pool);
  ops::layernorm_cpu({ops::f32_view(x.data(), cols), ops::f32_view(r.data(), cols), w.data(), b.data(),
                      ops::f32_view(r.data(), cols), rows, cols, 1e-12f, false},
                     pool);
  EXPECT_EQ(out, r);
}

TEST(Embed, SumsWordPositionAndOwnSegmentRows) {
  ThreadPool pool(2);
  const std::size_t cols = 7, vocab = 13, maxpos = 20, offset = 2;
  auto word = random_vector(vocab * cols, 1);
  auto pos = random_vector(maxpos * cols, 2);
  auto type = random_vector(2 * cols, 3);
  std::vector<int32_t> tokens = {3, 12, 0, 5, 7, 1};
  std::vector<int32_t> types = {0, 1, 1, 0, 0, 1};
  std::vector<int32_t> starts = {0, 3, 4, 6};
  std::vector<float> out(tokens.size() * cols);
  ops::embed_cpu({tokens.data(), types.data(), starts.data(), 3, ops::f32_view(word.data()), ops::f32_view(pos.data()),
                  offset, ops::f32_view(type.data()), ops::f32_view(out.data(), cols), cols},
                 pool);
  for (std::size_t s = 0; s < 3; ++s)
    for (int32_t t = starts[s]; t < starts[s + 1]; ++t)
      for (std::size_t j = 0; j < cols; ++j) {
        const std::size_t local = static_cast<std::size_t>(t - starts[s]);
        const double ref = word[static_cast<std::size_t>(tokens[t]) * cols + j] +
                           pos[(offset + local) * cols + j] + type[static_cast<std::size_t>(types[t]) * cols + j];
        ASSERT_NEAR(out[static_cast<std::size_t>(t) * cols + j], ref, 1e-6);
      }
}

// The CPU ops compute in f32: a view of another element type is refused, naming the op, and so
// are operands that differ in type (the checks both backends share).
TEST(OpArguments, CpuOpsRefuseHalfViewsAndMixedTypes) {
  ThreadPool pool(1);
  std::vector<float> a(64, 1.0f), b(64, 1.0f), w(8, 1.0f);
  std::vector<int32_t> starts = {0, 2}, positions = {0, 1};
  const ops::TensorView half{b.data(), DType::kF16, 8};
  const auto f32 = [](std::vector<float>& v, std::size_t ld) { return ops::f32_view(v.data(), ld); };
  const auto message = [](auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { ops::glu_cpu({half, half, 2, 4, Activation::kSilu}, pool); }).find("glu"),
            std::string::npos);
  EXPECT_NE(message([&] { ops::glu_cpu({f32(a, 8), half, 2, 4, Activation::kSilu}, pool); })
                .find("differ in element type"),
            std::string::npos);
  EXPECT_NE(message([&] {
              ops::layernorm_cpu({half, {}, w.data(), nullptr, half, 2, 8, 1e-6f, true}, pool);
            }).find("F16"),
            std::string::npos);
  EXPECT_NE(message([&] {
              ops::layernorm_cpu({f32(a, 8), half, w.data(), nullptr, f32(b, 8), 2, 8, 1e-6f, true}, pool);
            }).find("differ in element type"),
            std::string::npos);
  EXPECT_THROW(ops::rope_cpu({half, positions.data(), 2, 1, 8, 8, 10000.0f}, pool), Error);
  EXPECT_THROW(ops::pool_cpu({half, f32(a, 8), starts.data(), 1, 8, PoolingMode::kMean}, pool), Error);
  EXPECT_THROW(ops::l2_rows_cpu({half, 2, 8}, pool), Error);
  EXPECT_THROW(ops::bias_activation_cpu({half, {}, 2, 8, Activation::kGeluErf}), Error);
  std::vector<int32_t> tokens = {0, 1};
  EXPECT_THROW(ops::embed_cpu({tokens.data(), nullptr, starts.data(), 1, half, {}, 0, {}, half, 8}, pool), Error);
  EXPECT_THROW(ops::embed_cpu({tokens.data(), nullptr, starts.data(), 1, f32(a, 8), {}, 0, {}, half, 8}, pool), Error);
}

}  // namespace
}  // namespace il::test
