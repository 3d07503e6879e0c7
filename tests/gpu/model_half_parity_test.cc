// The f16 and bf16 modes on every fixture: the gate of the low-precision modes (cosine ≥ 0.999
// of each pooled vector to the committed transformers f32 result; cross-encoder scores within
// a stated tolerance), batch invariance in each mode, and graph replay giving the eager bits.
// A mode that fails here for a fixture fails the test: it is reported, never tolerated.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "fixture.h"
#include "gpu_test_util.h"
#include "inferencelayer/engine.h"

namespace il::test {
namespace {

constexpr double kMinCosine = 0.999;  // the acceptance gate of a low-precision mode (issue #4)
// Alone vs in a mixed batch, the same mode: only the GEMM algorithm (picked per row count) and
// so the f32 accumulation order differs; ten times closer than the gate.
constexpr double kBatchMinCosine = 0.9999;

// Scores are O(1) logits: |Δ| ≤ tol · max(1, |want|), with tol 0.01 for f16 and 0.04 for bf16
// (bf16 keeps 8 significant bits to f16's 11; the ratio of their unit roundoffs is 8).
double score_tolerance(const std::string& dtype) { return dtype == "f16" ? 0.01 : 0.04; }

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

// The worst relative score error: max |a − b| / max(1, |b|).
double score_error(const float* a, const float* b, std::size_t n) {
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]) / std::max(1.0, std::abs(double{b[i]})));
  }
  return worst;
}

EngineOptions options(const std::string& dtype, std::size_t max_batch_tokens = 16384) {
  EngineOptions o;
  o.device = "cuda:0";
  o.dtype = dtype;
  o.max_batch_tokens = max_batch_tokens;
  return o;
}

using Param = std::tuple<std::string, std::string>;  // fixture, dtype

class GpuHalfModelTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    IL_REQUIRE_GPU();
    fixture_ = load_fixture(std::get<0>(GetParam()));
    dtype_ = std::get<1>(GetParam());
    engine_ = Engine::load(fixture_.dir, options(dtype_));
  }
  bool embedding() const { return fixture_.kind == "embedding"; }
  Matrix run(Engine& e, const std::vector<TokenInput>& inputs) {
    return embedding() ? e.embed(inputs, {}) : e.score(inputs);
  }
  const std::vector<float>& expected(const FixtureCase& c) const { return embedding() ? c.pooled : c.scores; }
  std::vector<const FixtureCase*> all_cases() const {
    std::vector<const FixtureCase*> cases;
    for (const auto* list : {&fixture_.cases, &fixture_.id_cases})
      for (const FixtureCase& c : *list) cases.push_back(&c);
    return cases;
  }
  // True when `got` is close enough to `want` by this mode's criterion; `worst` tracks the
  // lowest cosine (embeddings) or the largest relative score error (cross-encoders).
  bool close(const float* got, const float* want, std::size_t n, double min_cos, double& worst) const {
    if (embedding()) {
      const double c = cosine(got, want, n);
      worst = std::min(worst, c);
      return c >= min_cos;
    }
    const double e = score_error(got, want, n);
    worst = std::max(worst, e);
    return e <= score_tolerance(dtype_);
  }
  std::string label() const { return std::get<0>(GetParam()) + " " + dtype_; }

  Fixture fixture_;
  std::string dtype_;
  std::unique_ptr<Engine> engine_;
};

TEST_P(GpuHalfModelTest, ReportsItsPrecision) {
  EXPECT_EQ(engine_->info().compute_dtype, dtype_);
}

TEST_P(GpuHalfModelTest, PassesTheGateAgainstTransformers) {
  double worst = embedding() ? 1.0 : 0.0;
  std::size_t checked = 0;
  for (const FixtureCase* c : all_cases()) {
    const Matrix out = run(*engine_, {c->input});
    ASSERT_EQ(out.cols, expected(*c).size());
    EXPECT_TRUE(close(out.row(0), expected(*c).data(), out.cols, kMinCosine, worst))
        << label() << ": " << c->input.ids.size() << " tokens: " << c->text;
    ++checked;
  }
  EXPECT_GT(checked, 0u);
  std::printf("[gpu] %s: %zu cases, %s vs transformers f32 %.6g\n", label().c_str(), checked,
              embedding() ? "min cosine" : "max relative score error", worst);
}

TEST_P(GpuHalfModelTest, BatchInvariance) {
  std::vector<TokenInput> inputs;
  for (const FixtureCase* c : all_cases()) inputs.push_back(c->input);
  const Matrix together = run(*engine_, inputs);
  double worst = embedding() ? 1.0 : 0.0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Matrix alone = run(*engine_, {inputs[i]});
    EXPECT_TRUE(close(alone.row(0), together.row(i), together.cols, kBatchMinCosine, worst)) << label() << " input " << i;
  }
  auto split_engine = Engine::load(fixture_.dir, options(dtype_, 70));  // many batches, each input fits
  const Matrix split = run(*split_engine, inputs);
  for (std::size_t i = 0; i < inputs.size(); ++i)
    EXPECT_TRUE(close(split.row(i), together.row(i), together.cols, kBatchMinCosine, worst)) << label() << " split " << i;
  std::printf("[gpu] %s: batch invariance %s %.6g\n", label().c_str(),
              embedding() ? "min cosine" : "max relative score error", worst);
}

TEST_P(GpuHalfModelTest, GraphReplayIsBitIdenticalToEagerRuns) {
  std::unique_ptr<Engine> eager, graphed;
  {
    const ScopedEnv env("IL_CUDA_GRAPHS", "0");
    eager = Engine::load(fixture_.dir, options(dtype_));
  }
  {
    const ScopedEnv env("IL_CUDA_GRAPHS", "always");
    graphed = Engine::load(fixture_.dir, options(dtype_));
  }
  std::vector<TokenInput> inputs;
  for (const FixtureCase* c : all_cases()) inputs.push_back(c->input);
  const Matrix want = run(*eager, inputs);
  for (Engine* engine : {engine_.get(), graphed.get()})
    for (int round = 0; round < 4; ++round) {  // graphed: eager, capture, replay, replay
      const Matrix got = run(*engine, inputs);
      ASSERT_EQ(got.data.size(), want.data.size());
      EXPECT_EQ(std::memcmp(got.data.data(), want.data.data(), want.data.size() * sizeof(float)), 0)
          << label() << " round " << round;
      const Matrix alone = run(*engine, {inputs.front()});
      const Matrix alone_eager = run(*eager, {inputs.front()});
      EXPECT_EQ(std::memcmp(alone.data.data(), alone_eager.data.data(), alone.data.size() * sizeof(float)), 0)
          << label() << " alone, round " << round;
    }
  EXPECT_GT(graphed->cuda_graphs(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GpuHalfModelTest,
                         ::testing::Combine(::testing::Values("bert-mean", "bert-cls", "bert-mean-f16",
                                                              "bert-mean-hd64", "bert-ce", "xlmr-ce", "xlmr-ce2",
                                                              "jina-ce", "modernbert-embed", "modernbert-ce",
                                                              "modernbert-ce-cls",
                                                              "nomic-embed", "nomic-embed-rot",
                                                              "nomic-embed-hf"),
                                            ::testing::Values("f16", "bf16")),
                         [](const auto& info) {
                           std::string n = std::get<0>(info.param) + "_" + std::get<1>(info.param);
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

TEST(GpuDtype, AutoIsF32AndUnknownIsRefused) {
  IL_REQUIRE_GPU();
  const Fixture f = load_fixture("bert-mean");
  EXPECT_EQ(Engine::load(f.dir, options("auto"))->info().compute_dtype, "f32");
  EXPECT_THROW(Engine::load(f.dir, options("f8")), std::exception);
}

}  // namespace
}  // namespace il::test
