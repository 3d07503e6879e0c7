// LFM2 (tests/fixtures/lfm2-hidden: a plain Lfm2Model folder of conv, attention, conv, attention
// layers) on CUDA through the Engine, against the committed transformers outputs and the CPU
// engine: the gated short convolution (ops/short_conv.h) over ragged batches, causal GQA attention
// with per-head q / k RMSNorm and rotary embeddings, the SwiGLU MLP and the final embedding_norm.
// - f32: pooled (mean) vectors within 1e-4 of transformers (tests/oracle's gate), final hidden
//   states within 3e-4 (as model_qwen3_test.cc), the CPU engine within 1e-4.
// - f16 / bf16: cosine ≥ 0.999 of every pooled vector and every hidden-state row to transformers'
//   f32 result (the low-precision gate).
// - Batches: one ragged batch of every input gives each input's result alone (f32 within 1e-5):
//   a convolution reading across a sequence boundary would break this.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "fixture.h"
#include "gpu_test_util.h"
#include "inferencelayer/engine.h"

namespace il::test {
namespace {

constexpr double kTolerance = 1e-4;
constexpr double kHiddenTolerance = 3e-4;
constexpr double kBatchTolerance = 1e-5;
constexpr double kMinCosine = 0.999;

EngineOptions options(const std::string& dtype) {
  EngineOptions o;
  o.device = "cuda:0";
  o.dtype = dtype;
  o.max_batch_tokens = 16384;
  return o;
}

double cosine(const float* a, const float* b, std::size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return -INFINITY;
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  if (aa == 0 && bb == 0) return 1.0;
  return ab / std::sqrt(aa * bb);
}

class GpuLfm2Test : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    IL_REQUIRE_GPU();
    fixture_ = load_fixture("lfm2-hidden");
    engine_ = Engine::load(fixture_.dir, options(GetParam()));
  }
  std::vector<const FixtureCase*> cases() const {
    std::vector<const FixtureCase*> v;
    for (const auto* list : {&fixture_.cases, &fixture_.id_cases})
      for (const FixtureCase& c : *list) v.push_back(&c);
    return v;
  }
  // f32: max-abs within `tol`; half modes: cosine ≥ 0.999. `worst` keeps the largest error.
  bool close(const float* got, const float* want, std::size_t n, double tol, double& worst) const {
    if (GetParam() == "f32") {
      const double e = max_abs_finite(got, want, n);
      worst = std::max(worst, e);
      return e <= tol;
    }
    const double c = cosine(got, want, n);
    worst = std::max(worst, 1.0 - c);
    return c >= kMinCosine;
  }

  Fixture fixture_;
  std::unique_ptr<Engine> engine_;
};

TEST_P(GpuLfm2Test, PooledAndHiddenStatesMatchTransformers) {
  EXPECT_EQ(engine_->info().compute_dtype, GetParam());
  double worst_pooled = 0, worst_hidden = 0;
  std::size_t rows = 0;
  for (const FixtureCase* c : cases()) {
    const Matrix out = engine_->embed({c->input}, {});
    ASSERT_EQ(out.cols, c->pooled.size());
    EXPECT_TRUE(close(out.row(0), c->pooled.data(), out.cols, kTolerance, worst_pooled))
        << GetParam() << ": " << c->input.ids.size() << " tokens: " << c->text;
    if (!c->hidden) continue;
    const auto h = engine_->hidden_states({c->input});
    ASSERT_EQ(h[0].rows, c->hidden->rows);
    ASSERT_EQ(h[0].cols, c->hidden->cols);
    for (std::size_t r = 0; r < h[0].rows; ++r, ++rows)
      EXPECT_TRUE(close(h[0].row(r), c->hidden->row(r), h[0].cols, kHiddenTolerance, worst_hidden))
          << GetParam() << " row " << r << " of " << c->text;
  }
  EXPECT_GT(rows, 0u) << "the fixture holds no hidden states";
  std::printf("[gpu lfm2] %s: pooled worst %.3g, hidden (%zu rows) worst %.3g (%s vs transformers)\n",
              GetParam().c_str(), worst_pooled, rows, worst_hidden,
              GetParam() == "f32" ? "max-abs" : "cosine deficit");
}

TEST_P(GpuLfm2Test, OneRaggedBatchGivesEachInputsResultAndAgreesWithTheCpu) {
  std::vector<TokenInput> inputs;
  for (const FixtureCase* c : cases()) inputs.push_back(c->input);
  const Matrix together = engine_->embed(inputs, {});
  const Matrix cpu = Engine::load(fixture_.dir, {})->embed(inputs, {});
  double worst_batch = 0, worst_cpu = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Matrix alone = engine_->embed({inputs[i]}, {});
    EXPECT_TRUE(close(alone.row(0), together.row(i), together.cols, kBatchTolerance, worst_batch)) << "input " << i;
    EXPECT_TRUE(close(together.row(i), cpu.row(i), together.cols, kTolerance, worst_cpu)) << "input " << i;
  }
  std::printf("[gpu lfm2] %s: batch vs alone worst %.3g, vs CPU worst %.3g\n", GetParam().c_str(), worst_batch,
              worst_cpu);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GpuLfm2Test, ::testing::Values("f32", "f16", "bf16"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace il::test
