// The sampler rows' CPU op (ops/canvas_sample.h) on hand-made rows: processed = logits / T (in
// place too), the first of tied maxima, the entropy of known distributions, the inverse-CDF draw
// at its boundaries, u past the total (the last token with p > 0), and refused arguments.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "ops/canvas_sample.h"

namespace il::test {
namespace {

std::vector<ops::RowDraw> sample(std::vector<float>& x, std::size_t cols, std::vector<float> temp,
                                 std::vector<double> u, std::vector<float>* processed = nullptr) {
  ThreadPool pool(2);
  const std::size_t rows = temp.size();
  std::vector<ops::RowDraw> out(rows);
  ops::CanvasSampleArgs a;
  a.logits = ops::ConstTensorView(ops::f32_view(x.data(), cols));
  a.processed = ops::f32_view(processed ? processed->data() : x.data(), cols);
  a.temperature = temp.data();
  a.uniform = u.data();
  a.rows = rows;
  a.cols = cols;
  a.out = out.data();
  ops::canvas_sample_cpu(a, pool);
  return out;
}

TEST(CanvasSampleCpu, DividesFindsTheFirstMaximumAndTheEntropy) {
  // Row 0: uniform over 4 (H = log 4), maxima tied: the first. Row 1: one dominant logit.
  std::vector<float> x = {1.0f, 1.0f, 1.0f, 1.0f, 0.0f, 0.0f, 60.0f, 0.0f};
  std::vector<float> processed(8);
  const auto out = sample(x, 4, {0.5f, 2.0f}, {0.3, 0.3}, &processed);
  EXPECT_EQ(processed, (std::vector<float>{2.0f, 2.0f, 2.0f, 2.0f, 0.0f, 0.0f, 30.0f, 0.0f}));
  EXPECT_EQ(out[0].argmax, 0);
  EXPECT_NEAR(out[0].entropy, std::log(4.0), 1e-6);
  EXPECT_EQ(out[0].sample, 1);  // 0.3 falls in the second quarter
  EXPECT_EQ(out[1].argmax, 2);
  EXPECT_NEAR(out[1].entropy, 0.0, 1e-10);
  EXPECT_EQ(out[1].sample, 2);
}

TEST(CanvasSampleCpu, DrawsAtTheBoundariesAndPastTheTotal) {
  // p = [0.25, 0, 0.75] up to rounding (the middle logit underflows to p = 0).
  const float l = std::log(3.0f);
  std::vector<float> x = {0.0f, -1000.0f, l, 0.0f, -1000.0f, l, 0.0f, -1000.0f, l};
  const auto out = sample(x, 3, {1.0f, 1.0f, 1.0f}, {0.0, 0.2499, 1.0 - 0x1.0p-53});
  EXPECT_EQ(out[0].sample, 0);  // u = 0: the first token with p > 0
  EXPECT_EQ(out[1].sample, 0);
  EXPECT_EQ(out[2].sample, 2);  // never the token with p = 0, not past the last with p > 0
  EXPECT_EQ(ops::inverse_cdf_draw(std::vector<float>{0.0f, -1000.0f}, 0.9999999999), 0);
}

TEST(CanvasSampleCpu, RefusesBadArguments) {
  std::vector<float> x(4, 0.0f);
  EXPECT_THROW(sample(x, 4, {0.0f}, {0.5}), Error);   // temperature 0
  EXPECT_THROW(sample(x, 4, {1.0f}, {1.0}), Error);   // u outside [0, 1)
  EXPECT_THROW(sample(x, 4, {1.0f}, {-0.1}), Error);
}

}  // namespace
}  // namespace il::test
