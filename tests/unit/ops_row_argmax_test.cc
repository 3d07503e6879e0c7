// Greedy decoding's pick per row (ops/logits.h, row_argmax_cpu): the first maximum, ties to the
// lowest index, NaN never winning, a row of −inf or one led by NaN giving 0 — the host sampler's
// scan (runtime/sampling.cc), which the generator replaces by this op where the pick is plain.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "ops/logits.h"

namespace il::ops {
namespace {

std::vector<int32_t> argmax(const std::vector<std::vector<float>>& rows, std::size_t ld) {
  ThreadPool pool(2);
  const std::size_t cols = rows.front().size();
  std::vector<float> x(rows.size() * ld, 99.0f);  // past the columns: never read
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t c = 0; c < cols; ++c) x[r * ld + c] = rows[r][c];
  std::vector<int32_t> out(rows.size(), -1);
  RowArgmaxArgs a;
  a.x = f32_view(x.data(), ld);
  a.rows = rows.size();
  a.cols = cols;
  a.out = out.data();
  row_argmax_cpu(a, pool);
  return out;
}

TEST(RowArgmaxCpu, FirstMaximumAsTheSamplerScans) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const std::vector<std::vector<float>> rows = {
      {0.5f, 2.0f, 2.0f, -1.0f},   // tie: the lower index
      {-inf, -inf, -inf, -inf},    // nothing beats the first
      {nan, 1.0f, 3.0f, 2.0f},     // a leading NaN keeps index 0
      {1.0f, nan, 3.0f, nan},      // a later NaN never wins
      {-inf, -5.0f, -inf, -4.0f},
      {-1.0f, -1.0f, -1.0f, -0.0f},
  };
  EXPECT_EQ(argmax(rows, 4), (std::vector<int32_t>{1, 0, 0, 2, 3, 3}));
  EXPECT_EQ(argmax(rows, 7), (std::vector<int32_t>{1, 0, 0, 2, 3, 3}));
}

TEST(RowArgmaxCpu, RefusesBadArguments) {
  ThreadPool pool(1);
  std::vector<float> x(8);
  int32_t out[2];
  RowArgmaxArgs a;
  a.x = f32_view(x.data(), 4);
  a.rows = 2;
  a.cols = 5;  // wider than the stride
  a.out = out;
  EXPECT_THROW(row_argmax_cpu(a, pool), Error);
  a.cols = 0;
  EXPECT_THROW(row_argmax_cpu(a, pool), Error);
  a.cols = 4;
  a.out = nullptr;
  EXPECT_THROW(row_argmax_cpu(a, pool), Error);
}

}  // namespace
}  // namespace il::ops
