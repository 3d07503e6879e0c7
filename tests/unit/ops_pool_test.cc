#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "ops/pool.h"
#include "reference.h"

namespace il::test {
namespace {

// Column j of rows [b, e) (ld floats apart) pooled in double.
double pool_reference(PoolingMode mode, const std::vector<float>& x, std::size_t ld, std::size_t b,
                      std::size_t e, std::size_t j) {
  double ref = 0;
  switch (mode) {
    case PoolingMode::kMean:
      for (std::size_t r = b; r < e; ++r) ref += x[r * ld + j];
      return ref / static_cast<double>(e - b);
    case PoolingMode::kCls: return x[b * ld + j];
    case PoolingMode::kLastToken: return x[(e - 1) * ld + j];
  }
  return ref;
}

TEST(Pool, MeanClsLastOverRaggedSequences) {
  ThreadPool pool(3);
  for (std::size_t cols : kOddSizes) {
    std::vector<int32_t> starts = {0, 1, 8, 105, 362};
    const std::size_t total = 362, ld = cols + 2;
    auto x = random_vector(total * ld, 5);
    for (PoolingMode mode : {PoolingMode::kMean, PoolingMode::kCls, PoolingMode::kLastToken}) {
      std::vector<float> out(4 * cols);
      ops::pool_cpu({ops::f32_view(x.data(), ld), ops::f32_view(out.data(), cols), starts.data(), 4, cols, mode}, pool);
      for (std::size_t s = 0; s < 4; ++s) {
        const auto b = static_cast<std::size_t>(starts[s]), e = static_cast<std::size_t>(starts[s + 1]);
        for (std::size_t j = 0; j < cols; ++j)
          ASSERT_NEAR(out[s * cols + j], pool_reference(mode, x, ld, b, e, j), 1e-5);
      }
    }
  }
}

// Pool starts (prompt tokens left out): mean and last read from the start on, CLS still reads
// the first row, a range that starts at the end pools to zeros, and a start outside is refused.
TEST(Pool, PoolStartsLeaveLeadingRowsOut) {
  ThreadPool pool(2);
  const std::size_t cols = 7, total = 20;
  const std::vector<int32_t> starts = {0, 5, 6, 20}, from = {3, 6, 6};
  const auto x = random_vector(total * cols, 11);
  for (PoolingMode mode : {PoolingMode::kMean, PoolingMode::kCls, PoolingMode::kLastToken}) {
    std::vector<float> out(3 * cols, 1.0f);
    ops::pool_cpu(
        {ops::f32_view(x.data(), cols), ops::f32_view(out.data(), cols), starts.data(), 3, cols, mode, from.data()},
        pool);
    for (std::size_t s = 0; s < 3; ++s) {
      const auto b = static_cast<std::size_t>(mode == PoolingMode::kCls ? starts[s] : from[s]);
      const auto e = static_cast<std::size_t>(starts[s + 1]);
      for (std::size_t j = 0; j < cols; ++j) {
        const double ref = b < e ? pool_reference(mode, x, cols, b, e, j) : 0.0;
        ASSERT_NEAR(out[s * cols + j], ref, 1e-6) << pooling_name(mode) << " sequence " << s;
      }
    }
  }
  std::vector<float> out(3 * cols);
  const std::vector<int32_t> outside = {3, 4, 6};  // 4 is before sequence 1's first row (5)
  EXPECT_THROW(ops::pool_cpu({ops::f32_view(x.data(), cols), ops::f32_view(out.data(), cols), starts.data(), 3, cols,
                              PoolingMode::kMean, outside.data()},
                             pool),
               Error);
}

TEST(Pool, OneRowPerSequenceCopiesRowSAndZeroesEmptySequences) {
  // First-token rows (row s: sequence s's first token), as a CLS-pooled model's last layer
  // leaves them: row s is copied, whatever seq_starts says about where the sequence's tokens are,
  // except that an empty sequence pools to zeros, as from token rows.
  const std::vector<int32_t> starts = {0, 3, 3, 4, 9};
  const std::size_t seqs = 4, cols = 5, ldx = 7, ldo = 6;
  std::vector<float> x(seqs * ldx);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) + 0.5f;
  std::vector<float> out(seqs * ldo, -1.0f);
  ThreadPool pool(2);
  ops::pool_cpu({ops::f32_view(x.data(), ldx), ops::f32_view(out.data(), ldo), starts.data(), seqs, cols,
                 PoolingMode::kCls, nullptr, true},
                pool);
  for (std::size_t s = 0; s < seqs; ++s)
    for (std::size_t j = 0; j < ldo; ++j) {
      const float want = j >= cols ? -1.0f : s == 1 ? 0.0f : x[s * ldx + j];
      EXPECT_EQ(out[s * ldo + j], want) << "sequence " << s << ", column " << j;
    }
  EXPECT_THROW(ops::pool_cpu({ops::f32_view(x.data(), ldx), ops::f32_view(out.data(), ldo), starts.data(), seqs, cols,
                              PoolingMode::kMean, nullptr, true},
                             pool),
               Error);
}

TEST(L2Rows, UnitNormAndZeroRowsStayZero) {
  ThreadPool pool(2);
  for (std::size_t rows : kOddSizes) {
    const std::size_t cols = 97;
    auto x = random_vector(rows * cols, 9, 4.0f);
    for (std::size_t j = 0; j < cols; ++j) x[j] = 0.0f;  // row 0 all zero
    auto orig = x;
    ops::l2_rows_cpu({ops::f32_view(x.data(), cols), rows, cols}, pool);
    for (std::size_t r = 0; r < rows; ++r) {
      double n = 0, n0 = 0;
      for (std::size_t j = 0; j < cols; ++j) {
        n += static_cast<double>(x[r * cols + j]) * x[r * cols + j];
        n0 += static_cast<double>(orig[r * cols + j]) * orig[r * cols + j];
      }
      if (r == 0) EXPECT_EQ(n, 0.0);
      else {
        EXPECT_NEAR(n, 1.0, 1e-5);
        for (std::size_t j = 0; j < cols; ++j)
          ASSERT_NEAR(x[r * cols + j], orig[r * cols + j] / std::sqrt(n0), 1e-6);
      }
    }
  }
}

}  // namespace
}  // namespace il::test
