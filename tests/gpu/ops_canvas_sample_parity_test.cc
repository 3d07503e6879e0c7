// DiffusionGemma's sampler rows (ops/canvas_sample.h) on CUDA against the CPU op: processed
// logits (the same f32 division: exact), first argmax (exact, ties included), entropy (both sum in
// f64: a few f32 units), and the inverse-CDF draw (exact, except where u lies within 1e-12 of the
// CPU's running sum at the crossing: the kernel adds in another order; such rows are counted and
// must be rare). Rows from flat to one-hot, u at 0, near 1 and random; vocabularies of 1, 33,
// 1,000 and the released 262,144; the processed rows written over the logits themselves too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "ops/canvas_sample.h"
#include "ops/ops_cuda.h"

namespace il::test {
namespace {

// How far u is from the CPU's running sums on either side of its draw, where rounding could move
// the draw: the sum before the first token with p > 0 is exactly 0, and past the last token with
// p > 0 every u gives that token, so neither side counts there.
double draw_margin(const std::vector<float>& processed, double u, int32_t sample) {
  const float mx = *std::max_element(processed.begin(), processed.end());
  double z = 0.0;
  for (float v : processed) z += std::exp(v - mx);
  const auto p = [&](std::size_t j) { return static_cast<float>(std::exp(processed[j] - mx) / z); };
  double run = 0.0, before = 0.0;
  bool first = true;
  for (std::size_t j = 0; j <= static_cast<std::size_t>(sample); ++j) {
    if (p(j) <= 0.0f) continue;
    first = j == static_cast<std::size_t>(sample) && run == 0.0;
    before = run;
    run += p(j);
  }
  bool last = true;
  for (std::size_t j = static_cast<std::size_t>(sample) + 1; j < processed.size() && last; ++j) last = p(j) <= 0.0f;
  return std::min(last ? INFINITY : std::abs(run - u), first ? INFINITY : std::abs(u - before));
}

std::vector<float> make_rows(std::size_t rows, std::size_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(rows * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    const float scale = std::array<float, 5>{0.0f, 0.5f, 3.0f, 12.0f, 30.0f}[r % 5];
    for (std::size_t c = 0; c < cols; ++c) x[r * cols + c] = scale * normal(rng);
    if (r % 7 == 6) x[r * cols + (cols - 1) / 2] += 40.0f;  // one token takes nearly all the mass
  }
  return x;
}

TEST(CanvasSample, MatchesCpuRowByRow) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  std::size_t close_calls = 0, draws = 0;
  for (const auto& [rows, cols] : std::vector<std::pair<std::size_t, std::size_t>>{
           {3, 1}, {9, 33}, {14, 1000}, {10, 262144}}) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE(std::to_string(rows) + " × " + std::to_string(cols) + (in_place ? " in place" : ""));
      const std::vector<float> x = make_rows(rows, cols, static_cast<uint32_t>(rows * 31 + cols));
      std::vector<float> temp(rows);
      std::vector<double> u(rows);
      std::mt19937_64 rng(cols);
      for (std::size_t r = 0; r < rows; ++r) {
        temp[r] = 0.4f + 0.13f * static_cast<float>(r);
        u[r] = r == 0 ? 0.0 : r == 1 ? 1.0 - 0x1.0p-53 : static_cast<double>(rng() >> 11) * 0x1.0p-53;
      }
      std::vector<float> cpu_proc(rows * cols);
      std::vector<ops::RowDraw> cpu_out(rows);
      ops::CanvasSampleArgs a;
      a.logits = ops::ConstTensorView(ops::f32_view(x.data(), cols));
      a.processed = ops::f32_view(cpu_proc.data(), cols);
      a.temperature = temp.data();
      a.uniform = u.data();
      a.rows = rows;
      a.cols = cols;
      a.out = cpu_out.data();
      ops::canvas_sample_cpu(a, pool);

      const DeviceArray<float> dx(x), dproc(std::vector<float>(rows * cols, 0.0f)), dtemp(temp);
      const DeviceArray<double> du(u);
      const DeviceArray<ops::RowDraw> dout{std::vector<ops::RowDraw>(rows)};
      ops::CanvasSampleArgs g = a;
      g.logits = ops::ConstTensorView(ops::f32_view(dx.get(), cols));
      g.processed = ops::f32_view(in_place ? dx.get() : dproc.get(), cols);
      g.temperature = dtemp.get();
      g.uniform = du.get();
      g.out = dout.get();
      ops::canvas_sample_cuda(g, nullptr);
      const std::vector<ops::RowDraw> gpu_out = dout.download();
      const std::vector<float> gpu_proc = in_place ? dx.download() : dproc.download();
      ASSERT_EQ(gpu_proc, cpu_proc);
      for (std::size_t r = 0; r < rows; ++r) {
        EXPECT_EQ(gpu_out[r].argmax, cpu_out[r].argmax) << "row " << r;
        EXPECT_NEAR(gpu_out[r].entropy, cpu_out[r].entropy, 4e-6 * std::max(1.0f, std::abs(cpu_out[r].entropy)))
            << "row " << r;
        const std::vector<float> row(cpu_proc.begin() + static_cast<std::ptrdiff_t>(r * cols),
                                     cpu_proc.begin() + static_cast<std::ptrdiff_t>((r + 1) * cols));
        ++draws;
        if (draw_margin(row, u[r], cpu_out[r].sample) < 1e-12) {
          ++close_calls;
          continue;
        }
        EXPECT_EQ(gpu_out[r].sample, cpu_out[r].sample) << "row " << r << " u " << u[r];
      }
    }
  }
  std::printf("[canvas sample] %zu draws compared, %zu within 1e-12 of a boundary (not compared)\n", draws,
              close_calls);
  EXPECT_LE(close_calls * 10, draws);
}

TEST(CanvasSample, FillRowsSetsOnlyItsRows) {
  IL_REQUIRE_GPU();
  const std::size_t ld = 37, cols = 30;
  const DeviceArray<float> d(std::vector<float>(6 * ld, 1.0f));
  ops::fill_rows_cuda(d.get() + 2 * ld, ld, 3, cols, -INFINITY, nullptr);
  const std::vector<float> h = d.download();
  for (std::size_t r = 0; r < 6; ++r)
    for (std::size_t c = 0; c < ld; ++c)
      EXPECT_EQ(h[r * ld + c], r >= 2 && r < 5 && c < cols ? -INFINITY : 1.0f) << r << ", " << c;
}

}  // namespace
}  // namespace il::test
