// LFM2 beyond what every fixture checks (oracle_test.cc): what the engine says the folder is, and
// the worst error of its hidden states against transformers, printed for the record.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "fixture.h"
#include "backends/cpu/cpu_executor.h"
#include "inferencelayer/engine.h"
#include "models/registry.h"

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
  EXPECT_FALSE(i.capabilities.multi_vector) << "a plain Lfm2Model folder is pooled, not multi-vector";
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

// A PyLate (LFM2-ColBERT) folder: lfm2-hidden's trunk plus a Dense module (64 → 16, no bias,
// identity, random weights; no markers, since lfm2-hidden's tokenizer has none). The engine
// serves its hidden states (the same trunk: the fixture's numbers) and refuses pooled embeddings
// (tests/oracle/lfm2_colbert_test.cc checks its token vectors and MaxSim against PyLate's
// numbers on a fixture of its own); the plan's "tokens" program gives each token's
// L2-normalised projection, checked here against the same arithmetic done in double from the
// plan's own hidden rows.
class Lfm2Colbert : public ::testing::Test {
 protected:
  void SetUp() override {
    fixture_ = load_fixture("lfm2-hidden");
    dir_ = std::filesystem::temp_directory_path() / ("il_lfm2_colbert_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::copy(fixture_.dir, dir_, std::filesystem::copy_options::recursive);
    std::ofstream(dir_ / "modules.json")
        << R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},)"
        << R"({"idx":1,"name":"1","path":"1_Dense","type":"pylate.models.Dense.Dense"}])";
    std::filesystem::create_directories(dir_ / "1_Dense");
    std::ofstream(dir_ / "1_Dense" / "config.json")
        << R"({"in_features":64,"out_features":16,"bias":false,)"
        << R"("activation_function":"torch.nn.modules.linear.Identity"})";
    std::ofstream(dir_ / "config_sentence_transformers.json")
        << R"({"query_prefix":"","document_prefix":"","query_length":32,"document_length":180,)"
        << R"("attend_to_expansion_tokens":true,"skiplist_words":[".",","],"do_query_expansion":true})";
    std::mt19937 g(7);
    std::normal_distribution<float> n(0.0f, 0.2f);
    w_.resize(16 * 64);
    for (float& v : w_) v = n(g);
    const std::string header =
        R"({"linear.weight":{"dtype":"F32","shape":[16,64],"data_offsets":[0,)" + std::to_string(w_.size() * 4) + "]}}";
    std::string bytes(8, '\0');
    const uint64_t len = header.size();
    std::memcpy(bytes.data(), &len, 8);
    bytes += header;
    bytes.append(reinterpret_cast<const char*>(w_.data()), w_.size() * 4);
    std::ofstream(dir_ / "1_Dense" / "model.safetensors", std::ios::binary) << bytes;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Fixture fixture_;
  std::filesystem::path dir_;
  std::vector<float> w_;
};

TEST_F(Lfm2Colbert, ServesHiddenStatesAndRefusesPooledEmbeddings) {
  auto engine = Engine::load(dir_, {});
  EXPECT_EQ(engine->info().layout, "lfm2-colbert");
  EXPECT_TRUE(engine->info().capabilities.hidden_states);
  EXPECT_FALSE(engine->info().capabilities.embed);
  EXPECT_TRUE(engine->info().capabilities.multi_vector);
  EXPECT_THROW(engine->embed({engine->tokenize("a")}, {}), Error);
  const FixtureCase& c = fixture_.id_cases.at(2);
  ASSERT_TRUE(c.hidden);
  const Matrix h = engine->hidden_states({c.input}).at(0);
  double worst = 0;
  for (std::size_t k = 0; k < h.data.size(); ++k)
    worst = std::max(worst, std::abs(static_cast<double>(h.data[k]) - c.hidden->data[k]));
  EXPECT_LE(worst, 1e-4);
}

TEST_F(Lfm2Colbert, TokensProgramIsTheNormalisedDenseProjectionOfEveryToken) {
  models::BuiltModel m = models::build_model_from_folder(dir_);
  ASSERT_TRUE(m.plan.has_program("tokens"));
  ASSERT_EQ(m.embedding_dim, 16u);
  cpu::CpuExecutor exec(m.plan, 512, 2);
  plan::Batch batch;
  batch.seq_starts = {0};
  for (const FixtureCase* c : {&fixture_.id_cases.at(1), &fixture_.cases.at(0), &fixture_.id_cases.at(2)}) {
    batch.tokens.insert(batch.tokens.end(), c->input.ids.begin(), c->input.ids.end());
    batch.seq_starts.push_back(static_cast<int32_t>(batch.tokens.size()));
  }
  exec.set_batch(batch);
  exec.run("encode");
  exec.run("tokens");
  const std::size_t T = batch.tokens.size();
  std::vector<float> hidden(T * 64), tokens(T * 16);
  exec.read(m.plan.output("hidden"), hidden.data());
  exec.read(m.plan.output("tokens"), tokens.data());
  double worst = 0;
  for (std::size_t r = 0; r < T; ++r) {
    double y[16], norm = 0;
    for (std::size_t o = 0; o < 16; ++o) {
      y[o] = 0;
      for (std::size_t k = 0; k < 64; ++k) y[o] += static_cast<double>(w_[o * 64 + k]) * hidden[r * 64 + k];
      norm += y[o] * y[o];
    }
    for (std::size_t o = 0; o < 16; ++o)
      worst = std::max(worst, std::abs(y[o] / std::sqrt(norm) - tokens[r * 16 + o]));
  }
  EXPECT_LE(worst, 1e-5);
  std::printf("[lfm2-colbert] %zu token vectors: worst %.3g vs the double-precision projection\n", T, worst);
}

}  // namespace
}  // namespace il::test
