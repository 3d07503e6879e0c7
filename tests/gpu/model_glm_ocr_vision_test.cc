// GLM-OCR's vision tower (models/glm_ocr_vision) on CUDA against transformers 5.17
// (tests/fixtures/glm-ocr-vision): patch rows and multi-axis rope positions uploaded with the
// batch, window rows for the 2×2 downsample and the merger, CUDA graphs captured and replayed
// (IL_CUDA_GRAPHS=always).
// - f32: the merger rows within 1e-3 of transformers (max-abs; the CPU is within 1e-4, the GPU's
//   GEMMs and attention sum in other orders), the downsample rows too.
// - f16 / bf16: cosine ≥ 0.999 of every merger row to transformers' f32.
// - Each image alone gives its rows of the joint batch; images 0 and 1 have the same patch count
//   (one bucket, one graph) but other (h, w) positions, so a replay that kept the captured rope
//   positions would give image 0's rotations to image 1 and fail.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include "backends/cuda/cuda_backend.h"
#include "gpu_test_util.h"
#include "glm_ocr_vision_fixture.h"

namespace il::test {
namespace {

constexpr double kF32Tolerance = 1e-3;
constexpr double kMinCosine = 0.999;

double row_cosine(const float* a, const float* b, std::size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return -INFINITY;
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return aa == 0 && bb == 0 ? 1.0 : ab / std::sqrt(aa * bb);
}

double max_abs(const float* a, const float* b, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::abs(static_cast<double>(a[i]) - b[i]);
    if (!(d <= m)) m = std::isfinite(d) ? d : INFINITY;
  }
  return m;
}

class GpuGlmOcrVision : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { IL_REQUIRE_GPU(); }
  // Worst max-abs (f32) or 1 − cosine (halves) over the rows; false where one fails.
  bool close(const std::vector<float>& got, const float* want, std::size_t rows, std::size_t cols, double& worst) {
    bool ok = got.size() == rows * cols;
    for (std::size_t r = 0; ok && r < rows; ++r) {
      if (GetParam() == "f32") {
        const double e = max_abs(got.data() + r * cols, want + r * cols, cols);
        worst = std::max(worst, e);
        ok = ok && e <= kF32Tolerance;
      } else {
        const double c = row_cosine(got.data() + r * cols, want + r * cols, cols);
        worst = std::max(worst, 1.0 - c);
        ok = ok && c >= kMinCosine;
      }
    }
    return ok;
  }
};

struct Tower {
  plan::Plan plan;
  models::GlmOcrVisionViews views;
  std::unique_ptr<plan::Executor> exec;
};

std::unique_ptr<Tower> make_tower(const GlmOcrVisionFixture& f, const std::string& dtype) {
  auto t = std::make_unique<Tower>();
  const models::SafeTensorsSource src = glm_ocr_vision_weights();
  models::GlmOcrVisionOptions o;
  o.prefix = "";
  t->views = models::build_glm_ocr_vision(t->plan, f.config, src, o);
  const ScopedEnv graphs("IL_CUDA_GRAPHS", "always");
  t->exec = cuda::make_executor(t->plan, 256, 0, dtype);
  return t;
}

std::vector<float> run(Tower& t, const GlmOcrVisionFixture& f, std::size_t first_patch, std::size_t patches,
                       const std::vector<std::array<int, 3>>& grids, const plan::View& view, std::size_t cols) {
  const std::vector<float> pv(f.pixel_values.begin() + static_cast<std::ptrdiff_t>(first_patch * f.patch_dim),
                              f.pixel_values.begin() + static_cast<std::ptrdiff_t>((first_patch + patches) * f.patch_dim));
  t.exec->set_batch(runtime::make_merge_window_vision_batch(pv, f.patch_dim, grids));
  t.exec->run("vision");
  std::vector<float> out(patches / 4 * cols);
  t.exec->read(view, out.data());
  return out;
}

TEST_P(GpuGlmOcrVision, MergerRowsMatchTransformers) {
  const GlmOcrVisionFixture f = load_glm_ocr_vision_fixture();
  auto t = make_tower(f, GetParam());
  const std::size_t n = f.pixel_values.size() / f.patch_dim, o = f.out_hidden;
  double worst = 0, worst_down = 0;
  for (int pass = 0; pass < 3; ++pass) {  // eager, capture, replay
    const std::vector<float> rows = run(*t, f, 0, n, f.grid_thw, t->views.output, o);
    EXPECT_TRUE(close(rows, f.pooler_output.data(), n / 4, o, worst)) << GetParam() << " pass " << pass;
    if (GetParam() == "f32") {
      std::vector<float> down(n / 4 * o);
      t->exec->read(t->views.downsample, down.data());
      EXPECT_TRUE(close(down, f.last_hidden_state.data(), n / 4, o, worst_down)) << "downsample, pass " << pass;
    }
  }
  std::printf("[glm-ocr vision gpu] %s: merger rows worst %s %.3g (downsample %.3g)\n", GetParam().c_str(),
              GetParam() == "f32" ? "max-abs" : "1 - cosine", worst, worst_down);
}

TEST_P(GpuGlmOcrVision, EachImageAloneGivesItsRowsThroughGraphReplays) {
  const GlmOcrVisionFixture f = load_glm_ocr_vision_fixture();
  auto t = make_tower(f, GetParam());
  const std::size_t o = f.out_hidden;
  std::size_t first = 0;
  std::vector<std::size_t> starts;
  for (const auto& g : f.grid_thw) {
    starts.push_back(first);
    first += static_cast<std::size_t>(g[0] * g[1] * g[2]);
  }
  double worst = 0;
  // Image 0 three times (its shape captured), then image 1 (same bucket: a replay), then image 2.
  for (const std::size_t i : {0, 0, 0, 1, 1, 2, 2}) {
    const auto& g = f.grid_thw[i];
    const std::size_t patches = static_cast<std::size_t>(g[0] * g[1] * g[2]);
    const std::vector<float> rows = run(*t, f, starts[i], patches, {g}, t->views.output, o);
    EXPECT_TRUE(close(rows, f.pooler_output.data() + starts[i] / 4 * o, patches / 4, o, worst)) << "image " << i;
  }
  EXPECT_GT(t->exec->captured_graphs(), 0u);
  std::printf("[glm-ocr vision gpu] %s, images alone: worst %.3g, %zu graphs\n", GetParam().c_str(), worst,
              t->exec->captured_graphs());
}

INSTANTIATE_TEST_SUITE_P(Types, GpuGlmOcrVision, ::testing::Values("f32", "f16", "bf16"));

}  // namespace
}  // namespace il::test
