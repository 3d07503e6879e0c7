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

// A case's input as the engine tokenizes it (pairs of a prompt-scored model with the case's own
// instruction when it has one).
TokenInput tokenize_case(const Engine& engine, const FixtureCase& c) {
  if (!c.pair) return engine.tokenize(c.text);
  if (!c.instruction) return engine.tokenize_pair(c.text, *c.pair);
  TokenizeOptions o;
  o.instruction = *c.instruction;
  return engine.tokenize_pair_with(c.text, *c.pair, o);
}

TEST_P(OracleTest, TokenizerMatchesTransformers) {
  for (std::size_t i = 0; i < fixture_.cases.size(); ++i) {
    const FixtureCase& c = fixture_.cases[i];
    const TokenInput got = tokenize_case(*engine_, c);
    EXPECT_EQ(got.ids, c.input.ids) << "case " << i << ": " << c.text;
    if (!c.input.type_ids.empty()) {
      EXPECT_EQ(got.type_ids, c.input.type_ids) << "case " << i;
    }
  }
}

TEST_P(OracleTest, TextCasesOneAtATime) {
  for (std::size_t i = 0; i < fixture_.cases.size(); ++i) {
    const FixtureCase& c = fixture_.cases[i];
    const TokenInput in = tokenize_case(*engine_, c);
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
  const std::vector<TokenInput> inputs = all_inputs(fixture_);
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

// bert-mean's model with include_prompt: false in its Pooling config: sentence-transformers pools
// a prompted text without the prompt's tokens. Each case from its text and prompt name, alone,
// in one ragged batch and over many small ones; and with the prompt counted the vectors differ,
// so the test sees whether the prompt was left out.
TEST(PromptPooling, LeavesThePromptOutAsSentenceTransformersDoes) {
  const Fixture f = load_fixture("bert-mean-noprompt");
  auto engine = Engine::load(f.dir, {});
  EXPECT_FALSE(engine->info().include_prompt);
  std::vector<TokenInput> inputs;
  std::size_t prompted = 0;
  for (const FixtureCase& c : f.cases) {
    TokenInput in;
    if (c.prompt_name) {
      const std::string& prompt = engine->info().prompts.at(*c.prompt_name);
      in = engine->tokenize(prompt + c.input_text);
      in.prompt_tokens = engine->prompt_tokens(prompt);
      EXPECT_EQ(in.prompt_tokens, c.input.prompt_tokens) << "prompt " << *c.prompt_name;
      prompted += in.prompt_tokens > 0 ? 1 : 0;
    } else {
      in = engine->tokenize(c.text);
    }
    EXPECT_EQ(in.ids, c.input.ids) << c.text;
    const Matrix out = engine->embed({in}, {});
    EXPECT_LE(max_abs(out.row(0), c.pooled.data(), out.cols), kTolerance) << c.text;
    inputs.push_back(std::move(in));
  }
  EXPECT_GT(prompted, 0u);
  const Matrix together = engine->embed(inputs, {});
  EngineOptions small;
  small.max_batch_tokens = 70;
  const Matrix split = Engine::load(f.dir, small)->embed(inputs, {});
  double counted_gap = 0;
  std::vector<TokenInput> counted = inputs;
  for (TokenInput& in : counted) in.prompt_tokens = 0;
  const Matrix all_tokens = engine->embed(counted, {});
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_LE(max_abs(together.row(i), f.cases[i].pooled.data(), together.cols), kTolerance) << "batched " << i;
    EXPECT_LE(max_abs(split.row(i), together.row(i), together.cols), kBatchTolerance) << "split " << i;
    if (inputs[i].prompt_tokens > 0)
      counted_gap = std::max(counted_gap, max_abs(all_tokens.row(i), together.row(i), together.cols));
  }
  EXPECT_GT(counted_gap, 1e-3) << "pooling the prompt too gives the same vectors: the fixture cannot tell";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OracleTest,
                         ::testing::Values("bert-mean", "bert-cls", "bert-mean-f16", "bert-mean-hd64", "bert-ce",
                                           "xlmr-ce", "xlmr-ce2", "jina-ce", "qwen3-embed", "qwen3-rerank",
                                           "modernbert-embed", "modernbert-ce", "modernbert-ce-cls",
                                           "nomic-embed", "nomic-embed-rot", "nomic-embed-hf",
                                           "lfm2-hidden"),
                         [](const auto& info) { return fixture_test_name(info.param); });

}  // namespace
}  // namespace il::test
