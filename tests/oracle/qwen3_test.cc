// Qwen3 beyond what every fixture checks (oracle_test.cc): the embedder's Matryoshka dimensions
// and capabilities, the reranker's probability and prompt, against transformers /
// sentence-transformers (tools/oracle/make_qwen3_fixtures.py).
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "fixture.h"
#include "inferencelayer/engine.h"

namespace il::test {
namespace {

double max_abs(const float* a, const float* b, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

TEST(Qwen3Embedding, DescribesItselfByCapability) {
  const Fixture f = load_fixture("qwen3-embed");
  auto engine = Engine::load(f.dir, {});
  const ModelInfo& i = engine->info();
  EXPECT_EQ(i.model_type, "qwen3");
  EXPECT_EQ(i.layout, "qwen3");
  EXPECT_TRUE(i.capabilities.embed);
  EXPECT_TRUE(i.capabilities.hidden_states);
  EXPECT_FALSE(i.capabilities.score);
  EXPECT_EQ(i.kind, ModelKind::kEmbedding);
  EXPECT_EQ(i.pooling, PoolingMode::kLastToken);
  EXPECT_LT(i.kv_heads, i.heads) << "the fixture is meant to exercise grouped-query attention";
  EXPECT_THROW(engine->score({engine->tokenize("a")}), Error);
}

// sentence-transformers' truncate_dim keeps the first 32 values of the normalised vector; the
// engine, asked for 32 dimensions, normalises the cut (as TEI and OpenAI's `dimensions` do).
TEST(Qwen3Embedding, MatryoshkaDimensionsAreTheNormalisedPrefix) {
  const Fixture f = load_fixture("qwen3-embed");
  auto engine = Engine::load(f.dir, {});
  EmbedOptions o;
  o.dimensions = 32;
  std::size_t checked = 0;
  for (const FixtureCase& c : f.cases) {
    if (c.pooled_dim32.empty()) continue;
    const Matrix got = engine->embed({c.input}, o);
    ASSERT_EQ(got.cols, 32u);
    double norm = 0;
    for (float v : c.pooled_dim32) norm += static_cast<double>(v) * v;
    std::vector<float> want(c.pooled_dim32);
    for (float& v : want) v = static_cast<float>(v / std::sqrt(norm));
    EXPECT_LE(max_abs(got.row(0), want.data(), 32), 1e-4) << c.text;
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

TEST(Qwen3Reranker, ScoresAreTheYesNoLogitGapAndSigmoidIsTheCardsProbability) {
  const Fixture f = load_fixture("qwen3-rerank");
  auto engine = Engine::load(f.dir, {});
  const ModelInfo& i = engine->info();
  EXPECT_EQ(i.layout, "qwen3-reranker");
  EXPECT_TRUE(i.capabilities.score);
  EXPECT_FALSE(i.capabilities.embed);
  EXPECT_EQ(i.num_labels, 1);
  EXPECT_THROW(engine->embed({engine->tokenize("a")}, {}), Error);
  std::size_t checked = 0;
  for (const FixtureCase& c : f.cases) {
    if (!c.probability) continue;
    const Matrix s = engine->score({c.input});
    const double p = 1.0 / (1.0 + std::exp(-static_cast<double>(s.row(0)[0])));
    EXPECT_NEAR(p, *c.probability, 2e-5) << c.text;
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

// The prompt: the default instruction unless one is given, and truncation cuts the body only,
// keeping the template's prefix and suffix (the answer is read after the suffix).
TEST(Qwen3Reranker, TruncationKeepsThePromptAroundTheBody) {
  const Fixture f = load_fixture("qwen3-rerank");
  auto engine = Engine::load(f.dir, {});
  const TokenInput full = engine->tokenize_pair("what is a query", "a document about queries and answers");
  TokenizeOptions o;
  o.instruction = "Find the best answer";
  const TokenInput custom = engine->tokenize_pair_with("what is a query", "a document about queries and answers", o);
  EXPECT_NE(full.ids, custom.ids);

  std::string long_doc;
  for (int k = 0; k < 400; ++k) long_doc += "word ";
  const TokenInput cut = engine->tokenize_pair("q", long_doc);
  EXPECT_EQ(cut.ids.size(), static_cast<std::size_t>(engine->info().max_tokens));
  // Same start (prefix) and same end (suffix) as an untruncated prompt.
  ASSERT_GE(full.ids.size(), 20u);
  EXPECT_TRUE(std::equal(full.ids.begin(), full.ids.begin() + 10, cut.ids.begin()));
  EXPECT_TRUE(std::equal(full.ids.end() - 10, full.ids.end(), cut.ids.end() - 10));
  TokenizeOptions strict;
  strict.truncate = false;
  EXPECT_THROW(engine->tokenize_pair_with("q", long_doc, strict), Error);
}

TEST(Qwen3Reranker, OtherModelsRefuseAnInstruction) {
  auto engine = Engine::load(load_fixture("bert-ce").dir, {});
  TokenizeOptions o;
  o.instruction = "Find the best answer";
  EXPECT_THROW(engine->tokenize_pair_with("a", "b", o), Error);
}

}  // namespace
}  // namespace il::test
