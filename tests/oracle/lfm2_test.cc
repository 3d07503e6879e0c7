// LFM2 beyond what every fixture checks (oracle_test.cc): what the engine says the folder is, and
// the worst error of its hidden states against transformers, printed for the record.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "fixture.h"
#include "inferencelayer/engine.h"

namespace il::test {
namespace {

TEST(Lfm2, DescribesItselfByCapability) {
  const Fixture f = load_fixture("lfm2-hidden");
  auto engine = Engine::load(f.dir, {});
  const ModelInfo& i = engine->info();
  EXPECT_EQ(i.model_type, "lfm2");
  EXPECT_EQ(i.layout, "lfm2");
  EXPECT_EQ(i.architecture, "Lfm2Model");
  EXPECT_TRUE(i.capabilities.embed);
  EXPECT_TRUE(i.capabilities.hidden_states);
  EXPECT_FALSE(i.capabilities.score);
  EXPECT_FALSE(i.capabilities.multi_vector) << "the ColBERT layout is not implemented yet";
  EXPECT_EQ(i.pooling, PoolingMode::kMean);
  EXPECT_LT(i.kv_heads, i.heads) << "the fixture is meant to exercise grouped-query attention";
  EXPECT_THROW(engine->score({engine->tokenize("a")}), Error);
}

TEST(Lfm2, HiddenStatesOfEveryRecordedCase) {
  const Fixture f = load_fixture("lfm2-hidden");
  auto engine = Engine::load(f.dir, {});
  double worst = 0;
  std::size_t rows = 0;
  for (const auto* list : {&f.cases, &f.id_cases})
    for (const FixtureCase& c : *list) {
      if (!c.hidden) continue;
      const Matrix got = engine->hidden_states({c.input}).at(0);
      ASSERT_EQ(got.rows, c.hidden->rows);
      for (std::size_t k = 0; k < got.data.size(); ++k)
        worst = std::max(worst, std::abs(static_cast<double>(got.data[k]) - c.hidden->data[k]));
      rows += got.rows;
    }
  EXPECT_GT(rows, 200u) << "the fixture should hold the longest text's rows (past 64-key attention tiles)";
  EXPECT_LE(worst, 1e-4);
  std::printf("[lfm2] hidden states of %zu token rows: worst max-abs %.3g vs transformers\n", rows, worst);
}

}  // namespace
}  // namespace il::test
