// Greedy decoding's pick per row on CUDA (ops/logits.h, row_argmax_cuda) against the CPU op, in
// every element type (the half rows read exactly into f32, so the CPU runs on the same values):
// vocabularies of 1, 33, 1,000, GLM-OCR's 59,392 and DeepSeek-OCR's 129,280; rows with ties at
// the maximum spread over threads, rows of −inf, leading and scattered NaN, a padded stride.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "half_test_util.h"
#include "ops/logits.h"
#include "ops/ops_cuda.h"

namespace il::test {
namespace {

std::vector<float> make_rows(std::size_t rows, std::size_t cols, std::size_t ld, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x(rows * ld, 1e30f);  // past the columns: never read
  for (std::size_t r = 0; r < rows; ++r) {
    float* row = x.data() + r * ld;
    for (std::size_t c = 0; c < cols; ++c) row[c] = 4.0f * normal(rng);
    switch (r % 6) {
      case 1:  // the maximum three times, far apart: the lowest index wins
        for (std::size_t c : {cols - 1, cols / 2, cols / 3}) row[c] = 50.0f;
        break;
      case 2:
        for (std::size_t c = 0; c < cols; ++c) row[c] = -inf;
        break;
      case 3:
        row[0] = std::nanf("");
        break;
      case 4:
        for (std::size_t c = 1; c < cols; c += 7) row[c] = std::nanf("");
        break;
      case 5:  // every value equal
        for (std::size_t c = 0; c < cols; ++c) row[c] = 1.5f;
        break;
      default:
        break;
    }
  }
  return x;
}

TEST(RowArgmax, MatchesCpuInEveryType) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  for (const std::size_t cols : {1, 33, 1000, 59392, 129280}) {
    const std::size_t rows = 13, ld = cols + 3;
    const std::vector<float> x = make_rows(rows, cols, ld, static_cast<uint32_t>(cols));
    for (const DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
      SCOPED_TRACE(std::to_string(cols) + " columns, " + std::string(dtype_name(t)));
      const TypedArray held(x, t);  // on the device, and the values it holds for the CPU op
      std::vector<int32_t> want(rows);
      ops::RowArgmaxArgs a;
      a.x = ops::f32_view(held.values().data(), ld);
      a.rows = rows;
      a.cols = cols;
      a.out = want.data();
      ops::row_argmax_cpu(a, pool);

      const DeviceArray<int32_t> dout{std::vector<int32_t>(rows, -1)};
      ops::RowArgmaxArgs g = a;
      g.x = held.view(0, ld);
      g.out = dout.get();
      ops::row_argmax_cuda(g, nullptr);
      EXPECT_EQ(dout.download(), want);
    }
  }
}

}  // namespace
}  // namespace il::test
