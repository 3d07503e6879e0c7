// Every fixture model on CUDA (f32) against the committed transformers outputs, with the CPU
// oracle's tolerance; batch invariance on the GPU (alone, one mixed batch, many small batches);
// and the CUDA engine against the CPU engine on the same inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fixture.h"
#include "gpu_test_util.h"
#include "inferencelayer/engine.h"

namespace il::test {
namespace {

constexpr double kTolerance = 1e-4;       // as tests/oracle: max-abs on pooled vectors and scores
constexpr double kBatchTolerance = 1e-5;  // as tests/oracle

double max_abs(const float* a, const float* b, std::size_t n) { return max_abs_finite(a, b, n); }

EngineOptions on_cuda(std::size_t max_batch_tokens = 16384) {
  EngineOptions o;
  o.device = "cuda:0";
  o.max_batch_tokens = max_batch_tokens;
  return o;
}

class GpuModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    IL_REQUIRE_GPU();
    fixture_ = load_fixture(GetParam());
    engine_ = Engine::load(fixture_.dir, on_cuda());
  }

  Matrix run(Engine& e, const std::vector<TokenInput>& inputs) {
    return fixture_.kind == "embedding" ? e.embed(inputs, {}) : e.score(inputs);
  }
  const std::vector<float>& expected(const FixtureCase& c) const {
    return fixture_.kind == "embedding" ? c.pooled : c.scores;
  }
  std::vector<TokenInput> all_inputs() const { return test::all_inputs(fixture_); }

  Fixture fixture_;
  std::unique_ptr<Engine> engine_;
};

TEST_P(GpuModelTest, EveryCaseMatchesTransformers) {
  std::size_t checked = 0;
  double worst = 0;
  for (const auto* list : {&fixture_.cases, &fixture_.id_cases})
    for (const FixtureCase& c : *list) {
      const Matrix out = run(*engine_, {c.input});
      ASSERT_EQ(out.cols, expected(c).size());
      const double err = max_abs(out.row(0), expected(c).data(), out.cols);
      worst = std::max(worst, err);
      EXPECT_LE(err, kTolerance) << c.input.ids.size() << " tokens: " << c.text;
      ++checked;
    }
  EXPECT_GT(checked, 0u);
  std::printf("[gpu] %s: %zu cases, max-abs error vs transformers %.3g\n", GetParam().c_str(), checked, worst);
}

TEST_P(GpuModelTest, HiddenStatesMatchTransformers) {
  std::size_t checked = 0;
  for (const auto* list : {&fixture_.cases, &fixture_.id_cases})
    for (const FixtureCase& c : *list) {
      if (!c.hidden) continue;
      const auto out = engine_->hidden_states({c.input});
      ASSERT_EQ(out[0].rows, c.hidden->rows);
      ASSERT_EQ(out[0].cols, c.hidden->cols);
      EXPECT_LE(max_abs(out[0].data.data(), c.hidden->data.data(), out[0].data.size()), kTolerance);
      ++checked;
    }
  EXPECT_GT(checked, 0u) << "the fixture holds no hidden states";
}

TEST_P(GpuModelTest, BatchInvariance) {
  const auto inputs = all_inputs();
  const Matrix together = run(*engine_, inputs);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Matrix alone = run(*engine_, {inputs[i]});
    EXPECT_LE(max_abs(alone.row(0), together.row(i), together.cols), kBatchTolerance) << "input " << i;
  }
  auto split_engine = Engine::load(fixture_.dir, on_cuda(70));  // many batches, each input fits
  const Matrix split = run(*split_engine, inputs);
  EXPECT_LE(max_abs(split.data.data(), together.data.data(), together.data.size()), kBatchTolerance);
}

TEST_P(GpuModelTest, AgreesWithTheCpuEngine) {
  const auto inputs = all_inputs();
  auto cpu = Engine::load(fixture_.dir, {});
  const Matrix want = run(*cpu, inputs);
  const Matrix got = run(*engine_, inputs);
  ASSERT_EQ(got.data.size(), want.data.size());
  const double err = max_abs(got.data.data(), want.data.data(), want.data.size());
  EXPECT_LE(err, kTolerance);
  std::printf("[gpu] %s: CUDA vs CPU engine max-abs %.3g over %zu inputs\n", GetParam().c_str(), err, inputs.size());
}

TEST_P(GpuModelTest, GraphReplayIsBitIdenticalToEagerRuns) {
  // engine_ decides per batch shape whether a graph pays (two eager runs, then capture or not);
  // `graphed` captures every shape on its second run. Over four rounds both must give the bits
  // of an engine that never captures (IL_CUDA_GRAPHS=0), which launches the same bucketed shapes.
  std::unique_ptr<Engine> eager, graphed;
  {
    const ScopedEnv env("IL_CUDA_GRAPHS", "0");
    eager = Engine::load(fixture_.dir, on_cuda());
  }
  {
    const ScopedEnv env("IL_CUDA_GRAPHS", "always");
    graphed = Engine::load(fixture_.dir, on_cuda());
  }
  const auto inputs = all_inputs();
  const Matrix want = run(*eager, inputs);
  std::size_t compared = 0;
  for (Engine* engine : {engine_.get(), graphed.get()})
    for (int round = 0; round < 4; ++round) {
      const Matrix got = run(*engine, inputs);
      ASSERT_EQ(got.data.size(), want.data.size());
      EXPECT_EQ(std::memcmp(got.data.data(), want.data.data(), want.data.size() * sizeof(float)), 0)
          << "mixed batch, round " << round;
      for (std::size_t i = 0; i < inputs.size(); i += 3) {
        const Matrix alone = run(*engine, {inputs[i]});
        const Matrix alone_eager = run(*eager, {inputs[i]});
        EXPECT_EQ(std::memcmp(alone.data.data(), alone_eager.data.data(), alone.data.size() * sizeof(float)), 0)
            << "input " << i << ", round " << round;
        ++compared;
      }
    }
  EXPECT_GT(compared, 0u);
  EXPECT_GT(graphed->cuda_graphs(), 0u);
  EXPECT_EQ(eager->cuda_graphs(), 0u);
}

// A folder pooled without its prompt (include_prompt: false): the pool starts go up with the
// batch. Every case alone and all together, f32 against transformers and f16 by the gate.
TEST(GpuPromptPooling, LeavesThePromptOutLikeTheCpu) {
  IL_REQUIRE_GPU();
  const Fixture f = load_fixture("bert-mean-noprompt");
  std::vector<TokenInput> inputs;
  for (const FixtureCase& c : f.cases) inputs.push_back(c.input);
  std::size_t prompted = 0;
  for (const TokenInput& in : inputs) prompted += in.prompt_tokens > 0 ? 1 : 0;
  ASSERT_GT(prompted, 0u);
  for (const char* dtype : {"f32", "f16"}) {
    EngineOptions o = on_cuda();
    o.dtype = dtype;
    auto engine = Engine::load(f.dir, o);
    const Matrix together = engine->embed(inputs, {});
    double worst = 0, worst_cos = 1;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      for (const Matrix& got : {engine->embed({inputs[i]}, {}), together}) {
        const float* row = got.rows == 1 ? got.row(0) : got.row(i);
        worst = std::max(worst, max_abs(row, f.cases[i].pooled.data(), got.cols));
        double dot = 0;
        for (std::size_t j = 0; j < got.cols; ++j) dot += static_cast<double>(row[j]) * f.cases[i].pooled[j];
        worst_cos = std::min(worst_cos, dot);  // both unit length
      }
    }
    if (std::string(dtype) == "f32") {
      EXPECT_LE(worst, kTolerance);
    } else {
      EXPECT_GE(worst_cos, 0.999);
    }
    // Captured and replayed (the pool starts' device address is part of the graph): the bits of
    // the eager runs above.
    std::unique_ptr<Engine> graphed;
    {
      const ScopedEnv env("IL_CUDA_GRAPHS", "always");
      graphed = Engine::load(f.dir, o);
    }
    for (int round = 0; round < 3; ++round) {  // eager, capture, replay
      const Matrix again = graphed->embed(inputs, {});
      EXPECT_EQ(std::memcmp(again.data.data(), together.data.data(), together.data.size() * sizeof(float)), 0)
          << dtype << " round " << round;
    }
    EXPECT_GT(graphed->cuda_graphs(), 0u);
    std::printf("[gpu] bert-mean-noprompt %s: %zu cases (%zu prompted), max-abs %.3g, min cosine %.6f\n", dtype,
                inputs.size(), prompted, worst, worst_cos);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GpuModelTest,
                         ::testing::Values("bert-mean", "bert-cls", "bert-mean-f16", "bert-mean-hd64", "bert-ce",
                                           "xlmr-ce", "xlmr-ce2", "jina-ce", "modernbert-embed", "modernbert-ce",
                                           "modernbert-ce-cls",
                                           "nomic-embed", "nomic-embed-rot",
                                           "nomic-embed-hf"),
                         [](const auto& info) { return fixture_test_name(info.param); });

}  // namespace
}  // namespace il::test
