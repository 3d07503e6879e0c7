// Late-interaction scores (ops/maxsim.h) on CUDA against the CPU op, in every element type of the
// token vectors: every (query, document) pair of a ragged batch with an empty sequence, with and
// without the document row mask, dims 1 / 31 / 128 / 130 on a strided buffer. f16 / bf16 vectors
// are rounded once and the CPU op gets the same values, so only the summation order differs (the
// kernel's butterfly dot products and per-warp partials): tolerance 2e-5 of max(1, Σ_i |best_i|),
// the sum of the query rows' best dot products taken in absolute value (computed here in double):
// the rounding of a sum scales with its terms, and the random rows are not normalised, so a
// query's dot products can cancel to a score far smaller than they are (seen: 180 rows against
// a one-row document, 2.2e-5 of |score|).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "half_test_util.h"
#include "ops/maxsim.h"
#include "ops/ops_cuda.h"
#include "../unit/reference.h"

namespace il::test {
namespace {

class MaxSim : public ::testing::TestWithParam<DType> {};

TEST_P(MaxSim, MatchesCpuOnEveryPairOfARaggedBatch) {
  IL_REQUIRE_GPU();
  const DType t = GetParam();
  ThreadPool pool(0);
  const std::vector<int32_t> lens = {3, 0, 32, 180, 1, 7, 64};
  std::vector<int32_t> starts = {0};
  for (int32_t l : lens) starts.push_back(starts.back() + l);
  std::vector<int32_t> pairs;
  for (int32_t q = 0; q < static_cast<int32_t>(lens.size()); ++q)
    for (int32_t d = 0; d < static_cast<int32_t>(lens.size()); ++d) pairs.insert(pairs.end(), {q, d});
  const std::size_t np = pairs.size() / 2, rows = static_cast<std::size_t>(starts.back());
  const DeviceArray<int32_t> dstarts(starts), dpairs(pairs);
  double worst = 0;
  uint32_t seed = 500;
  for (std::size_t dim : {1, 31, 128, 130})
    for (int use_keep = 0; use_keep < 2; ++use_keep) {
      const std::size_t ld = dim + 3;
      const std::vector<float> host = random_vector(rows * ld, seed++, 1.0f);
      std::vector<float> values = host;
      std::unique_ptr<DeviceArray<float>> f32;
      std::unique_ptr<HalfArray> half;
      ops::ConstTensorView view;
      if (t == DType::kF32) {
        f32 = std::make_unique<DeviceArray<float>>(host);
        view = ops::f32_view(f32->get(), ld);
      } else {
        half = std::make_unique<HalfArray>(host, t);
        values = half->rounded();
        view = half->view(0, ld);
      }
      std::vector<uint8_t> keep(rows);
      for (std::size_t r = 0; r < rows; ++r) keep[r] = (r * 7 + dim) % 5 != 0;
      std::vector<float> cpu(np);
      ops::maxsim_cpu({ops::f32_view(values.data(), ld), starts.data(), lens.size(), pairs.data(), np, dim,
                       use_keep ? keep.data() : nullptr, cpu.data()},
                      pool);
      const DeviceArray<uint8_t> dkeep(keep);
      DeviceArray<float> dscores(std::vector<float>(np, -7.0f));
      ops::maxsim_cuda({view, dstarts.get(), lens.size(), dpairs.get(), np, dim, use_keep ? dkeep.get() : nullptr,
                        dscores.get()},
                       nullptr);
      const std::vector<float> got = dscores.download();
      for (std::size_t p = 0; p < np; ++p) {
        const int32_t q = pairs[2 * p], d = pairs[2 * p + 1];
        double magnitude = 0;
        for (int32_t i = starts[q]; i < starts[q + 1]; ++i) {
          double best = -INFINITY;
          for (int32_t j = starts[d]; j < starts[d + 1]; ++j) {
            if (use_keep && !keep[j]) continue;
            double dot = 0;
            for (std::size_t c = 0; c < dim; ++c) dot += double{values[i * ld + c]} * values[j * ld + c];
            best = std::max(best, dot);
          }
          if (std::isfinite(best)) magnitude += std::abs(best);
        }
        const double err = std::abs(static_cast<double>(got[p]) - cpu[p]) / std::max(1.0, magnitude);
        worst = std::max(worst, std::isfinite(got[p]) ? err : INFINITY);
        EXPECT_LE(err, 2e-5) << type_name(t) << " dim " << dim << " keep " << use_keep << " pair " << pairs[2 * p]
                             << "," << pairs[2 * p + 1];
      }
    }
  std::printf("[maxsim] %s: worst error %.3g of max(1, sum |best|) (tolerance 2e-5)\n", type_name(t).c_str(), worst);
}

INSTANTIATE_TEST_SUITE_P(Types, MaxSim, ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return type_name(info.param); });

}  // namespace
}  // namespace il::test
