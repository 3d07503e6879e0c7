// The CPU engine against transformers: every fixture folder, from text and from raw token ids,
// one input at a time and inside mixed-length batches.
#include <gtest/gtest.h>

#include <cmath>

#include "fixture.h"
#include "inferencelayer/engine.h"

namespace il::test {
namespace {

constexpr double kTolerance = 1e-4;  // max-abs on pooled vectors and scores (the gate)
constexpr double kBatchTolerance = 1e-5;

double max_abs(const float* a, const float* b, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

class OracleTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    fixture_ = load_fixture(GetParam());
    engine_ = Engine::load(fixture_.dir, {});
  }

  // Runs the model on the inputs; returns one output row per input.
  Matrix run(const std::vector<TokenInput>& inputs) {
    return fixture_.kind == "embedding" ? engine_->embed(inputs, {}) : engine_->score(inputs);
  }
  const std::vector<float>& expected(const FixtureCase& c) const {
    return fixture_.kind == "embedding" ? c.pooled : c.scores;
  }

  Fixture fixture_;
  std::unique_ptr<Engine> engine_;
};

TEST_P(OracleTest, TokenizerMatchesTransformers) {
  for (std::size_t i = 0; i < fixture_.cases.size(); ++i) {
    const FixtureCase& c = fixture_.cases[i];
    const TokenInput got = c.pair ? engine_->tokenize_pair(c.text, *c.pair) : engine_->tokenize(c.text);
    EXPECT_EQ(got.ids, c.input.ids) << "case " << i << ": " << c.text;
    if (!c.input.type_ids.empty()) {
      EXPECT_EQ(got.type_ids, c.input.type_ids) << "case " << i;
    }
  }
}

TEST_P(OracleTest, TextCasesOneAtATime) {
  for (std::size_t i = 0; i < fixture_.cases.size(); ++i) {
    const FixtureCase& c = fixture_.cases[i];
    const TokenInput in = c.pair ? engine_->tokenize_pair(c.text, *c.pair) : engine_->tokenize(c.text);
    const Matrix out = run({in});
    ASSERT_EQ(out.cols, expected(c).size()) << "case " << i;
    EXPECT_LE(max_abs(out.row(0), expected(c).data(), out.cols), kTolerance) << "case " << i << ": " << c.text;
  }
}

TEST_P(OracleTest, TokenIdCasesOneAtATime) {
  ASSERT_FALSE(fixture_.id_cases.empty());
  for (std::size_t i = 0; i < fixture_.id_cases.size(); ++i) {
    const FixtureCase& c = fixture_.id_cases[i];
    const Matrix out = run({c.input});
    ASSERT_EQ(out.cols, expected(c).size());
    EXPECT_LE(max_abs(out.row(0), expected(c).data(), out.cols), kTolerance)
        << "id case " << i << " (" << c.input.ids.size() << " tokens)";
  }
}

TEST_P(OracleTest, HiddenStatesMatchTransformers) {
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

TEST_P(OracleTest, BatchInvariance) {
  // Every input alone, then all of them (texts and raw ids, mixed lengths) in one ragged batch,
  // then the same list split over many small batches: the rows must agree.
  std::vector<TokenInput> inputs;
  for (const FixtureCase& c : fixture_.cases) inputs.push_back(c.input);
  for (const FixtureCase& c : fixture_.id_cases) inputs.push_back(c.input);
  const Matrix together = run(inputs);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Matrix alone = run({inputs[i]});
    EXPECT_LE(max_abs(alone.row(0), together.row(i), together.cols), kBatchTolerance) << "input " << i;
  }
  EngineOptions small;
  small.max_batch_tokens = 70;  // forces many batches, each input still fits
  auto split_engine = Engine::load(fixture_.dir, small);
  const Matrix split = fixture_.kind == "embedding" ? split_engine->embed(inputs, {}) : split_engine->score(inputs);
  EXPECT_LE(max_abs(split.data.data(), together.data.data(), together.data.size()), kBatchTolerance);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OracleTest,
                         ::testing::Values("bert-mean", "bert-cls", "bert-mean-f16", "bert-ce", "xlmr-ce", "xlmr-ce2",
                                           "jina-ce"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace il::test
