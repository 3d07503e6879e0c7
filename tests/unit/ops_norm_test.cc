#include <gtest/gtest.h>

#include <cmath>

#include "ops/embed.h"
#include "ops/layernorm.h"
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
  ops::layernorm_cpu({x.data(), cols, residual ? r.data() : nullptr, cols, w.data(),
                      bias ? b.data() : nullptr, out.data(), cols, rows, cols, eps, rms},
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
  ops::layernorm_cpu({x.data(), cols, r.data(), cols, w.data(), b.data(), out.data(), cols, rows, cols, 1e-12f, false}, pool);
  ops::layernorm_cpu({x.data(), cols, r.data(), cols, w.data(), b.data(), r.data(), cols, rows, cols, 1e-12f, false}, pool);
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
  ops::embed_cpu({tokens.data(), types.data(), starts.data(), 3, word.data(), pos.data(), offset,
                  type.data(), out.data(), cols, cols},
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

}  // namespace
}  // namespace il::test
