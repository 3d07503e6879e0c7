// ops/maxsim.h on the CPU: a hand-computed case (with and without the document row mask), empty
// and fully masked documents, and random batches against a double-precision brute force.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "ops/maxsim.h"
#include "reference.h"

namespace il::ops {
namespace {

TEST(MaxSim, HandComputedScores) {
  ThreadPool pool(2);
  // Sequence 0 (query): (1, 0), (0, 1). Sequence 1 (document): (0.6, 0.8), (1, 0), (−1, 0).
  // Sequence 2: empty. Rows have stride 3 (a third column the op must not read: dim 2).
  const std::vector<float> x = {1, 0, 9, 0, 1, 9, 0.6f, 0.8f, 9, 1, 0, 9, -1, 0, 9};
  const std::vector<int32_t> starts = {0, 2, 5, 5};
  const std::vector<int32_t> pairs = {0, 1, 0, 2, 1, 0};
  std::vector<float> scores(3, -7.0f);
  maxsim_cpu({f32_view(x.data(), 3), starts.data(), 3, pairs.data(), 3, 2, nullptr, scores.data()}, pool);
  EXPECT_FLOAT_EQ(scores[0], 1.0f + 0.8f);  // best of each query row: 1 (row (1, 0)), 0.8
  EXPECT_FLOAT_EQ(scores[1], 0.0f);         // an empty document contributes nothing
  // Sequence 1 as the query against sequence 0: (0.6, 0.8) → 0.8, (1, 0) → 1, (−1, 0) → max(−1, 0) = 0.
  EXPECT_FLOAT_EQ(scores[2], 0.8f + 1.0f + 0.0f);
  // Dropping the document's row (1, 0) (a skiplist token): the first query row's best is 0.6.
  const std::vector<uint8_t> keep = {1, 1, 1, 0, 1};
  maxsim_cpu({f32_view(x.data(), 3), starts.data(), 3, pairs.data(), 1, 2, keep.data(), scores.data()}, pool);
  EXPECT_FLOAT_EQ(scores[0], 0.6f + 0.8f);
  const std::vector<uint8_t> none = {1, 1, 0, 0, 0};
  maxsim_cpu({f32_view(x.data(), 3), starts.data(), 3, pairs.data(), 1, 2, none.data(), scores.data()}, pool);
  EXPECT_FLOAT_EQ(scores[0], 0.0f);
}

TEST(MaxSim, RandomBatchesMatchABruteForce) {
  ThreadPool pool(3);
  const std::vector<int32_t> lens = {32, 0, 180, 1, 7, 64};
  std::vector<int32_t> starts = {0};
  for (int32_t l : lens) starts.push_back(starts.back() + l);
  for (std::size_t dim : {1, 31, 128}) {
    const std::size_t rows = static_cast<std::size_t>(starts.back()), ld = dim + 1;
    const std::vector<float> x = test::random_vector(rows * ld, static_cast<uint32_t>(dim), 1.0f);
    std::vector<uint8_t> keep(rows);
    for (std::size_t r = 0; r < rows; ++r) keep[r] = (r * 7 + dim) % 5 != 0;
    std::vector<int32_t> pairs;
    for (int32_t q = 0; q < 6; ++q)
      for (int32_t d = 0; d < 6; ++d) pairs.insert(pairs.end(), {q, d});
    const std::size_t np = pairs.size() / 2;
    std::vector<float> scores(np);
    maxsim_cpu({f32_view(x.data(), ld), starts.data(), lens.size(), pairs.data(), np, dim, keep.data(), scores.data()},
               pool);
    for (std::size_t p = 0; p < np; ++p) {
      const int32_t q = pairs[2 * p], d = pairs[2 * p + 1];
      double want = 0;
      for (int32_t i = starts[q]; i < starts[q + 1]; ++i) {
        double best = -std::numeric_limits<double>::infinity();
        for (int32_t j = starts[d]; j < starts[d + 1]; ++j) {
          if (!keep[j]) continue;
          double dot = 0;
          for (std::size_t c = 0; c < dim; ++c) dot += static_cast<double>(x[i * ld + c]) * x[j * ld + c];
          best = std::max(best, dot);
        }
        if (std::isfinite(best)) want += best;
      }
      EXPECT_NEAR(scores[p], want, 1e-5 * std::max(1.0, std::abs(want))) << "dim " << dim << " pair " << q << "," << d;
    }
  }
}

TEST(MaxSim, RefusesAPairOutsideTheBatch) {
  ThreadPool pool(1);
  const std::vector<float> x = {1, 2};
  const std::vector<int32_t> starts = {0, 1, 2};
  const std::vector<int32_t> pairs = {0, 2};
  float score = 0;
  EXPECT_THROW(maxsim_cpu({f32_view(x.data(), 1), starts.data(), 2, pairs.data(), 1, 1, nullptr, &score}, pool), Error);
}

}  // namespace
}  // namespace il::ops
