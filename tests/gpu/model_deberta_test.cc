// DeBERTa (tests/fixtures/deberta-*: the v3 embedder and cross-encoder, the v2-variant three-label
// classifier) on CUDA through the Engine, against the committed transformers outputs and the CPU
// engine: the disentangled attention kernel (both relative terms, log buckets, the table's edge;
// c2p only with raw clamped distances), absolute positions and segments of the v2 variant, the
// pooler's own activation.
// - f32: pooled vectors, scores and final hidden states within 1e-4 of transformers (the oracle
//   gate); one ragged batch of every input gives each input's result alone within 1e-5.
// - f16 / bf16: cosine ≥ 0.999 of every pooled vector and hidden-state row to transformers' f32
//   result; scores within 0.01 (f16) / 0.04 (bf16) of max(1, |s|), the BERT cross-encoders'
//   tolerances; alone vs in one ragged batch, cosine ≥ 0.9999 (embeddings) or the same score
//   tolerances, as model_half_parity_test holds BERT.
// Every mode runs the table form of the disentangled attention (c2p / p2c tables gathered into
// the flash kernel's score tiles: tensor cores in f16 / bf16, the f32 flash kernel in f32); the
// CudaCoreForm instantiation holds the per-pair kernel (IL_DISENTANGLED_TC=0) to the same gates.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>

#include "fixture.h"
#include "gpu_test_util.h"
#include "inferencelayer/engine.h"

namespace il::test {
namespace {

constexpr double kTolerance = 1e-4;
constexpr double kBatchTolerance = 1e-5;
constexpr double kMinCosine = 0.999;
constexpr double kBatchMinCosine = 0.9999;  // half modes, alone vs in a batch (model_half_parity_test)

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

using Param = std::tuple<std::string, std::string, bool>;  // fixture, dtype, CUDA-core form

class GpuDebertaTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    IL_REQUIRE_GPU();
    fixture_ = load_fixture(std::get<0>(GetParam()));
    dtype_ = std::get<1>(GetParam());
    // The executor reads the switch when it is built.
    if (std::get<2>(GetParam())) setenv("IL_DISENTANGLED_TC", "0", 1);
    engine_ = Engine::load(fixture_.dir, options(dtype_));
    unsetenv("IL_DISENTANGLED_TC");
  }
  bool embedding() const { return fixture_.kind == "embedding"; }
  Matrix run(Engine& e, const std::vector<TokenInput>& inputs) {
    return embedding() ? e.embed(inputs, {}) : e.score(inputs);
  }
  const std::vector<float>& expected(const FixtureCase& c) const { return embedding() ? c.pooled : c.scores; }
  // One output row (pooled vector or scores) against its reference, by this mode's criterion.
  bool close(const float* got, const float* want, std::size_t n, double& worst) const {
    if (dtype_ == "f32") {
      const double e = max_abs_finite(got, want, n);
      worst = std::max(worst, e);
      return e <= kTolerance;
    }
    if (embedding()) {
      const double c = cosine(got, want, n);
      worst = std::max(worst, 1.0 - c);
      return c >= kMinCosine;
    }
    double e = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isfinite(got[i])) return false;
      e = std::max(e, std::abs(static_cast<double>(got[i]) - want[i]) / std::max(1.0, std::abs(static_cast<double>(want[i]))));
    }
    worst = std::max(worst, e);
    return e <= (dtype_ == "f16" ? 0.01 : 0.04);
  }
  Fixture fixture_;
  std::string dtype_;
  std::unique_ptr<Engine> engine_;
};

TEST_P(GpuDebertaTest, OutputsMatchTransformers) {
  double worst = 0;
  for (const auto* list : {&fixture_.cases, &fixture_.id_cases})
    for (const FixtureCase& c : *list) {
      const Matrix out = run(*engine_, {c.input});
      ASSERT_EQ(out.cols, expected(c).size());
      EXPECT_TRUE(close(out.row(0), expected(c).data(), out.cols, worst))
          << dtype_ << " " << c.input.ids.size() << " tokens: " << c.text;
    }
  std::printf("%s %s: worst %s %.3g\n", std::get<0>(GetParam()).c_str(), dtype_.c_str(),
              dtype_ == "f32" ? "max abs" : (embedding() ? "1 - cosine" : "relative score error"), worst);
}

TEST_P(GpuDebertaTest, HiddenStatesMatchTransformers) {
  std::size_t checked = 0;
  double worst = 0;
  for (const auto* list : {&fixture_.cases, &fixture_.id_cases})
    for (const FixtureCase& c : *list) {
      if (!c.hidden) continue;
      const Matrix h = engine_->hidden_states({c.input}).at(0);
      ASSERT_EQ(h.rows, c.hidden->rows);
      ASSERT_EQ(h.cols, c.hidden->cols);
      for (std::size_t r = 0; r < h.rows; ++r) {
        if (dtype_ == "f32") {
          const double e = max_abs_finite(h.row(r), c.hidden->row(r), h.cols);
          worst = std::max(worst, e);
          EXPECT_LE(e, kTolerance) << c.input.ids.size() << " tokens, row " << r;
        } else {
          const double cs = cosine(h.row(r), c.hidden->row(r), h.cols);
          worst = std::max(worst, 1.0 - cs);
          EXPECT_GE(cs, kMinCosine) << dtype_ << " " << c.input.ids.size() << " tokens, row " << r;
        }
      }
      ++checked;
    }
  EXPECT_GT(checked, 0u);
  std::printf("%s %s hidden: worst %s %.3g\n", std::get<0>(GetParam()).c_str(), dtype_.c_str(),
              dtype_ == "f32" ? "max abs" : "1 - cosine", worst);
}

TEST_P(GpuDebertaTest, ABatchGivesEachInputsResultAlone) {
  const std::vector<TokenInput> inputs = all_inputs(fixture_);
  const Matrix together = run(*engine_, inputs);
  double worst = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Matrix alone = run(*engine_, {inputs[i]});
    if (dtype_ == "f32") {
      EXPECT_LE(max_abs_finite(alone.row(0), together.row(i), together.cols), kBatchTolerance) << "input " << i;
    } else if (embedding()) {
      // Alone vs in a batch only the GEMM algorithm (picked per row count), and so the f32
      // accumulation order, differs: ten times closer than the mode's gate, as for BERT.
      const double c = cosine(alone.row(0), together.row(i), together.cols);
      worst = std::max(worst, 1.0 - c);
      EXPECT_GE(c, kBatchMinCosine) << dtype_ << " input " << i;
    } else {
      EXPECT_TRUE(close(alone.row(0), together.row(i), together.cols, worst)) << dtype_ << " input " << i;
    }
  }
  if (dtype_ != "f32") {
    std::printf("%s %s: batch invariance worst %.3g\n", std::get<0>(GetParam()).c_str(), dtype_.c_str(), worst);
    return;
  }
  auto cpu = Engine::load(fixture_.dir, {});
  const Matrix on_cpu = run(*cpu, inputs);
  EXPECT_LE(max_abs_finite(on_cpu.data.data(), together.data.data(), together.data.size()), kTolerance);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GpuDebertaTest,
                         ::testing::Combine(::testing::Values("deberta-embed", "deberta-ce", "deberta-v2-ce", "deberta-v2-conv-ce",
                                                              "deberta-v2-embproj-ce"),
                                            ::testing::Values("f32", "f16", "bf16"), ::testing::Values(false)),
                         [](const auto& info) {
                           return fixture_test_name(std::get<0>(info.param)) + "_" + std::get<1>(info.param);
                         });
INSTANTIATE_TEST_SUITE_P(CudaCoreForm, GpuDebertaTest,
                         ::testing::Combine(::testing::Values("deberta-embed", "deberta-v2-ce"),
                                            ::testing::Values("f32", "f16", "bf16"), ::testing::Values(true)),
                         [](const auto& info) {
                           return fixture_test_name(std::get<0>(info.param)) + "_" + std::get<1>(info.param);
                         });

}  // namespace
}  // namespace il::test
