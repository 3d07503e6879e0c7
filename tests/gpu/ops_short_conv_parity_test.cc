// LFM2's gated short causal convolution (ops/short_conv.h) on CUDA against the CPU op, in every
// element type: ragged batches (sequences of 1, 2, taps − 1, taps and many tokens, and empty ones),
// padding rows past the batch (which must come out zero), taps 1 to kShortConvMaxTaps, odd channel
// counts and strided windows (B | C | x inside a wider buffer at an odd column, as a fused
// projection leaves it). f16 / bf16 inputs are rounded once and the CPU op gets the same values,
// so what is measured is the kernel's own error. Tolerances: f32 1e-6 of the output's scale (the
// kernel sums the taps in the CPU's order with rounded products and sums: equal up to the
// compiler's own float rounding of the CPU loop), f16 / bf16 4 unit roundoffs of the type.
// Columns outside the output view must keep their values.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "half_test_util.h"
#include "ops/ops_cuda.h"
#include "ops/short_conv.h"
#include "../unit/reference.h"

namespace il::test {
namespace {

constexpr float kSentinel = 0.75f;


class ShortConv : public ::testing::TestWithParam<DType> {
 protected:
  DType type() const { return GetParam(); }
  double tol() const { return type() == DType::kF32 ? 1e-6 : 4.0 * unit_roundoff(type()); }
};

TEST_P(ShortConv, MatchesCpuOnRaggedBatchesWithPaddingRows) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  uint32_t seed = 90;
  double worst = 0.0;
  for (std::size_t taps : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4}, ops::kShortConvMaxTaps})
    for (std::size_t n : {1, 7, 64, 97, 1024})
      for (int layout = 0; layout < 2; ++layout) {
        // Sequence lengths: short ones around the filter length, an empty one, a long one.
        const std::vector<int32_t> lens = {1, 0, static_cast<int32_t>(taps - 1 > 0 ? taps - 1 : 1),
                                           static_cast<int32_t>(taps), 2, 300, static_cast<int32_t>(taps + 1), 5};
        std::vector<int32_t> starts = {0};
        for (int32_t l : lens) starts.push_back(starts.back() + l);
        const std::size_t tokens = static_cast<std::size_t>(starts.back());
        const std::size_t rows = tokens + 13;  // padding rows past the batch, as a CUDA bucket launches
        // 0: dense B | C | x and output; 1: windows at odd columns of wider buffers.
        const std::size_t x_off = layout == 1 ? 5 : 0, ldx = layout == 1 ? 3 * n + 9 : 3 * n;
        const std::size_t o_off = layout == 1 ? 2 : 0, ldo = layout == 1 ? n + 3 : n;
        const TypedArray x(random_vector(rows * ldx, seed++, 2.0f), type());
        const std::vector<float> w = random_vector(n * taps, seed++, 0.7f);
        std::vector<float> cpu_out(rows * ldo, kSentinel);
        ops::short_conv_cpu({ops::f32_view(x.values().data() + x_off, ldx), w.data(),
                             ops::f32_view(cpu_out.data() + o_off, ldo), starts.data(), lens.size(), rows, n, taps},
                            pool);
        const DeviceArray<float> dw(w);
        const DeviceArray<int32_t> dstarts(starts);
        const TypedArray gout(std::vector<float>(rows * ldo, kSentinel), type());
        ops::short_conv_cuda({x.view(x_off, ldx), dw.get(), gout.view(o_off, ldo), dstarts.get(), lens.size(), rows,
                              n, taps},
                             nullptr);
        const std::vector<float> got = gout.download();
        const double err = rel_error(got, cpu_out);
        worst = std::max(worst, err);
        EXPECT_LE(err, tol()) << type_name(type()) << " taps=" << taps << " n=" << n << " layout=" << layout;
        // Padding rows are zero on both sides (the CPU op's own contract, checked here once).
        for (std::size_t r = tokens; r < rows; ++r)
          for (std::size_t c = 0; c < n; ++c) ASSERT_EQ(got[r * ldo + o_off + c], 0.0f) << "padding row " << r;
      }
  std::printf("[short_conv] %s: worst error %.3g (tolerance %.3g)\n", type_name(type()).c_str(), worst, tol());
}

INSTANTIATE_TEST_SUITE_P(Types, ShortConv, ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return type_name(info.param); });

}  // namespace
}  // namespace il::test
