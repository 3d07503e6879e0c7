// nomic-bert beyond what every fixture checks (oracle_test.cc): how the folder describes itself,
// the prompts users put in front of texts ("search_query: " / "search_document: ") taken from
// config_sentence_transformers.json by name, and Matryoshka dimensions, against the contrib
// arithmetic written out in tools/oracle/make_nomic_fixtures.py.
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

TEST(NomicBert, DescribesItselfAndReadsTheFoldersPrompts) {
  for (const char* name : {"nomic-embed", "nomic-embed-rot", "nomic-embed-hf"}) {
    auto engine = Engine::load(load_fixture(name).dir, {});
    const ModelInfo& i = engine->info();
    EXPECT_EQ(i.model_type, "nomic_bert") << name;
    EXPECT_EQ(i.layout, "nomic-bert") << name;
    EXPECT_TRUE(i.capabilities.embed);
    EXPECT_TRUE(i.capabilities.hidden_states);
    EXPECT_FALSE(i.capabilities.score);
    EXPECT_EQ(i.pooling, PoolingMode::kMean);
    EXPECT_TRUE(i.normalize);
    EXPECT_EQ(i.kv_heads, i.heads);
    EXPECT_EQ(i.type_vocab, 2);
    EXPECT_EQ(i.max_tokens, 512) << "the tokenizer's model_max_length bounds n_positions' 8192";
    EXPECT_EQ(i.prompts.at("query"), "search_query: ");
    EXPECT_EQ(i.prompts.at("document"), "search_document: ");
    EXPECT_THROW(engine->score({engine->tokenize("a")}), Error);
  }
  // The gated MLP's width is n_inner rounded up to a multiple of 256, as the contrib class builds it.
  EXPECT_EQ(Engine::load(load_fixture("nomic-embed").dir, {})->info().intermediate, 256);
  EXPECT_EQ(Engine::load(load_fixture("nomic-embed-rot").dir, {})->info().intermediate, 128);
  // transformers' layout writes the width itself (intermediate_size).
  EXPECT_EQ(Engine::load(load_fixture("nomic-embed-hf").dir, {})->info().intermediate, 256);
}

// The same model in the release layout and in transformers' (nomic-embed-hf: nomic-embed's
// tensors renamed, Wqkv split into q / k / v) gives the same vectors and hidden states.
TEST(NomicBert, TransformersLayoutEqualsTheReleaseLayout) {
  const Fixture f = load_fixture("nomic-embed");
  auto release = Engine::load(f.dir, {});
  auto hf = Engine::load(load_fixture("nomic-embed-hf").dir, {});
  EXPECT_EQ(hf->info().layout, "nomic-bert");
  const std::vector<TokenInput> inputs = all_inputs(f);
  const Matrix a = release->embed(inputs, {}), b = hf->embed(inputs, {});
  ASSERT_EQ(a.data.size(), b.data.size());
  EXPECT_LE(max_abs(a.data.data(), b.data.data(), a.data.size()), 1e-6);
  const auto ha = release->hidden_states({inputs.back()}), hb = hf->hidden_states({inputs.back()});
  ASSERT_EQ(ha[0].data.size(), hb[0].data.size());
  EXPECT_LE(max_abs(ha[0].data.data(), hb[0].data.data(), ha[0].data.size()), 1e-6);
}

// A prompted case from its prompt name and the bare text gives the ids and the vector of the
// prompt written in front of the text (include_prompt: the prompt's tokens are pooled too).
TEST(NomicBert, PromptsByNameGiveTheReferenceVectors) {
  for (const char* name : {"nomic-embed", "nomic-embed-rot", "nomic-embed-hf"}) {
    const Fixture f = load_fixture(name);
    auto engine = Engine::load(f.dir, {});
    std::size_t checked = 0;
    for (const FixtureCase& c : f.cases) {
      if (!c.prompt_name) continue;
      const TokenInput in = engine->tokenize(engine->info().prompts.at(*c.prompt_name) + c.input_text);
      EXPECT_EQ(in.ids, c.input.ids) << c.text;
      const Matrix got = engine->embed({in}, {});
      EXPECT_LE(max_abs(got.row(0), c.pooled.data(), got.cols), 1e-4) << c.text;
      ++checked;
    }
    EXPECT_EQ(checked, 2u) << name;
  }
}

// Asked for 32 dimensions, the engine gives the first 32 values of the vector, re-normalised.
TEST(NomicBert, MatryoshkaDimensionsAreTheNormalisedPrefix) {
  const Fixture f = load_fixture("nomic-embed");
  auto engine = Engine::load(f.dir, {});
  EmbedOptions o;
  o.dimensions = 32;
  std::size_t checked = 0;
  for (const FixtureCase& c : f.cases) {
    ASSERT_EQ(c.pooled_dim32.size(), 32u);
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

}  // namespace
}  // namespace il::test
