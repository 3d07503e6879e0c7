// LFM2-ColBERT served as a multi-vector model (tests/fixtures/lfm2-colbert, written by
// tools/oracle/make_lfm2_colbert_fixtures.py with PyLate's arithmetic over transformers'
// Lfm2Model): PyLate's tokenization of queries and documents (marker after the first token,
// query expansion with the EOS token, document_length, skiplist), the normalised vector of every
// kept token, MaxSim scores, and that none of it depends on what else shares a batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "fixture.h"
#include "inferencelayer/engine.h"
#include "runtime/colbert_inputs.h"

namespace il::test {
namespace {

using json = nlohmann::json;

struct Colbert {
  std::filesystem::path dir = fixtures_root() / "lfm2-colbert";
  json expected;
  Colbert() {
    std::ifstream in(dir / "expected.json");
    expected = json::parse(in);
  }
};

TokenInput as_role(const Engine& e, const std::string& text, TextRole role) {
  TokenizeOptions o;
  o.role = role;
  return e.tokenize_with(text, o);
}

// Largest |a - b| over a [rows, dim] matrix against the fixture's rows.
double worst_diff(const Matrix& m, const json& rows) {
  EXPECT_EQ(m.rows, rows.size());
  double worst = 0;
  for (std::size_t r = 0; r < std::min<std::size_t>(m.rows, rows.size()); ++r) {
    EXPECT_EQ(m.cols, rows[r].size());
    for (std::size_t c = 0; c < std::min<std::size_t>(m.cols, rows[r].size()); ++c)
      worst = std::max(worst, std::abs(static_cast<double>(m.row(r)[c]) - rows[r][c].get<double>()));
  }
  return worst;
}

TEST(Lfm2ColbertServing, DescribesItselfAsMultiVector) {
  Colbert f;
  auto e = Engine::load(f.dir, {});
  const ModelInfo& i = e->info();
  EXPECT_EQ(i.layout, "lfm2-colbert");
  EXPECT_TRUE(i.capabilities.multi_vector);
  EXPECT_TRUE(i.capabilities.hidden_states);
  EXPECT_FALSE(i.capabilities.embed);
  EXPECT_FALSE(i.capabilities.score);
  EXPECT_EQ(i.output_dim, 24);
  EXPECT_THROW(e->embed({e->tokenize("a")}, {}), Error);
  EXPECT_THROW(e->score({e->tokenize("a")}), Error);
}

TEST(Lfm2ColbertServing, TokenizesQueriesAndDocumentsAsPyLate) {
  Colbert f;
  auto e = Engine::load(f.dir, {});
  for (const json& q : f.expected["queries"]) {
    const TokenInput in = as_role(*e, q["text"].get<std::string>(), TextRole::kQuery);
    EXPECT_EQ(in.ids, q["input_ids"].get<std::vector<int32_t>>()) << q["text"];
    EXPECT_TRUE(in.keep.empty()) << "a query keeps every token, expansion included";
    EXPECT_EQ(in.ids.size(), f.expected["query_length"].get<std::size_t>());
  }
  for (const json& d : f.expected["documents"]) {
    const TokenInput in = as_role(*e, d["text"].get<std::string>(), TextRole::kDocument);
    EXPECT_EQ(in.ids, d["input_ids"].get<std::vector<int32_t>>()) << d["text"];
    EXPECT_EQ(in.keep, d["keep"].get<std::vector<uint8_t>>()) << d["text"];
  }
  // Without a role the text is tokenized plainly (hidden states of a text).
  EXPECT_EQ(e->tokenize("a").ids.size(), 2u);
}

TEST(Lfm2ColbertServing, TokenVectorsMatchPyLate) {
  Colbert f;
  auto e = Engine::load(f.dir, {});
  double worst = 0;
  std::size_t rows = 0;
  for (const char* group : {"queries", "documents"}) {
    std::vector<TokenInput> inputs;
    for (const json& c : f.expected[group]) {
      TokenInput in;
      in.ids = c["input_ids"].get<std::vector<int32_t>>();
      if (c.contains("keep")) in.keep = c["keep"].get<std::vector<uint8_t>>();
      inputs.push_back(std::move(in));
    }
    const std::vector<Matrix> v = e->token_vectors(inputs);
    ASSERT_EQ(v.size(), inputs.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      worst = std::max(worst, worst_diff(v[i], f.expected[group][i]["vectors"]));
      rows += v[i].rows;
    }
  }
  EXPECT_LE(worst, 1e-4);
  std::printf("[lfm2-colbert] %zu token vectors: worst %.3g vs PyLate's arithmetic\n", rows, worst);
  // The trunk under it: the first query's last hidden state.
  const json& q0 = f.expected["queries"][0];
  TokenInput in;
  in.ids = q0["input_ids"].get<std::vector<int32_t>>();
  EXPECT_LE(worst_diff(e->hidden_states({in}).at(0), q0["hidden"]), 1e-4);
}

TEST(Lfm2ColbertServing, MaxSimScoresMatchPyLate) {
  Colbert f;
  auto e = Engine::load(f.dir, {});
  std::vector<TokenInput> docs;
  for (const json& d : f.expected["documents"]) docs.push_back(as_role(*e, d["text"].get<std::string>(), TextRole::kDocument));
  double worst = 0;
  for (std::size_t q = 0; q < f.expected["queries"].size(); ++q) {
    const TokenInput query = as_role(*e, f.expected["queries"][q]["text"].get<std::string>(), TextRole::kQuery);
    const std::vector<float> s = e->late_interaction(query, docs);
    ASSERT_EQ(s.size(), docs.size());
    for (std::size_t d = 0; d < docs.size(); ++d) {
      const double want = f.expected["scores"][q][d].get<double>();
      // Each score sums query_length dot products of unit vectors: tolerance per term.
      worst = std::max(worst, std::abs(s[d] - want));
      EXPECT_NEAR(s[d], want, 1e-4 * f.expected["query_length"].get<double>()) << "query " << q << " document " << d;
    }
  }
  std::printf("[lfm2-colbert] MaxSim: worst %.3g vs PyLate's arithmetic\n", worst);
}

TEST(Lfm2ColbertServing, BatchInvariant) {
  Colbert f;
  auto e = Engine::load(f.dir, {});
  std::vector<TokenInput> all;
  for (const json& q : f.expected["queries"]) all.push_back(as_role(*e, q["text"].get<std::string>(), TextRole::kQuery));
  for (const json& d : f.expected["documents"])
    all.push_back(as_role(*e, d["text"].get<std::string>(), TextRole::kDocument));
  const std::vector<Matrix> together = e->token_vectors(all);
  double worst = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Matrix alone = e->token_vectors({all[i]}).at(0);
    ASSERT_EQ(alone.rows, together[i].rows);
    for (std::size_t k = 0; k < alone.data.size(); ++k)
      worst = std::max(worst, std::abs(static_cast<double>(alone.data[k]) - together[i].data[k]));
  }
  EXPECT_LE(worst, 1e-5);
  // Scores: every document at once against one at a time (each with its own batch).
  const std::size_t nq = f.expected["queries"].size();
  const std::vector<TokenInput> docs(all.begin() + static_cast<std::ptrdiff_t>(nq), all.end());
  const std::vector<float> at_once = e->late_interaction(all[0], docs);
  for (std::size_t d = 0; d < docs.size(); ++d)
    EXPECT_NEAR(e->late_interaction(all[0], {docs[d]}).at(0), at_once[d], 1e-5);
  // A batch budget that splits the documents over several batches, the query in each.
  EngineOptions small;
  small.max_batch_tokens = 1;  // raised to one maximal sequence; the documents split
  auto e2 = Engine::load(f.dir, small);
  const std::vector<float> split = e2->late_interaction(all[0], docs);
  for (std::size_t d = 0; d < docs.size(); ++d) EXPECT_NEAR(split[d], at_once[d], 1e-5);
}

// PyLate's assembly on its own: expansion on either padding side, no expansion, no marker.
TEST(Lfm2ColbertServing, InputAssembly) {
  runtime::ColbertTokens t;
  t.query_marker = 50;
  t.document_marker = 51;
  t.expansion_id = 9;
  t.skiplist = {3, 4};
  t.query_length = 6;
  t.document_length = 5;
  EXPECT_EQ(runtime::colbert_text_budget(t, true), 5u);
  EXPECT_EQ(runtime::colbert_input({1, 2, 7}, t, true).ids, (std::vector<int32_t>{1, 50, 2, 7, 9, 9}));
  t.pad_left = true;  // PyLate inserts after the first token whatever it is: here an expansion token
  EXPECT_EQ(runtime::colbert_input({1, 2, 7}, t, true).ids, (std::vector<int32_t>{9, 50, 9, 1, 2, 7}));
  t.expand_queries = false;
  EXPECT_EQ(runtime::colbert_input({1, 2, 7}, t, true).ids, (std::vector<int32_t>{1, 50, 2, 7}));
  const TokenInput d = runtime::colbert_input({1, 3, 2, 4}, t, false);
  EXPECT_EQ(d.ids, (std::vector<int32_t>{1, 51, 3, 2, 4}));
  EXPECT_EQ(d.keep, (std::vector<uint8_t>{1, 1, 0, 1, 0}));
  t.expand_queries = true;
  t.pad_left = false;
  t.mask_expansion = true;  // the marker and the text are keys, the expansion tokens not
  const TokenInput masked = runtime::colbert_input({1, 2, 7}, t, true);
  EXPECT_EQ(masked.ids, (std::vector<int32_t>{1, 50, 2, 7, 9, 9}));
  EXPECT_EQ(masked.attended_tokens, 4u);
  EXPECT_EQ(runtime::colbert_input({1, 2, 3, 4, 5}, t, true).attended_tokens, 0u) << "no expansion: no limit";
  EXPECT_THROW(runtime::colbert_input({}, t, true), Error);
  t.mask_expansion = false;
  t.expand_queries = false;
  t.document_marker.reset();
  EXPECT_EQ(runtime::colbert_text_budget(t, false), 5u);
  EXPECT_EQ(runtime::colbert_input({1, 2}, t, false).ids, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(runtime::colbert_input({}, t, true).ids, (std::vector<int32_t>{50}));
}

// Other settings of a copy of the fixture: masked query expansion (PyLate's default) against the
// masked-expansion vectors the generator recorded, and what the engine refuses, naming the file
// and field.
class Lfm2ColbertSettings : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("il_lfm2_colbert_refuse_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::copy(f_.dir, dir_, std::filesystem::copy_options::recursive);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void patch(const std::string& key, const json& value, const char* file = "config_sentence_transformers.json") {
    std::ifstream in(dir_ / file);
    json j = json::parse(in);
    j[key] = value;
    std::ofstream(dir_ / file) << j.dump();
  }
  std::string load_error() {
    try {
      (void)Engine::load(dir_, {});
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  Colbert f_;
  std::filesystem::path dir_;
};

TEST_F(Lfm2ColbertSettings, MaskedExpansionTokensMatchPyLate) {
  patch("attend_to_expansion_tokens", false);
  auto e = Engine::load(dir_, {});
  const json& masked = f_.expected["queries_masked_expansion"];
  ASSERT_EQ(masked.size(), f_.expected["queries"].size());
  std::vector<TokenInput> queries;
  double worst = 0;
  for (std::size_t q = 0; q < masked.size(); ++q) {
    const json& c = f_.expected["queries"][q];
    TokenInput in = as_role(*e, c["text"].get<std::string>(), TextRole::kQuery);
    EXPECT_EQ(in.ids, c["input_ids"].get<std::vector<int32_t>>());
    // The attention mask PyLate builds: 1 up to the first expansion token.
    std::size_t attended = 0;
    for (int x : c["expansion"]) attended += x == 0;
    EXPECT_EQ(in.attended_tokens, attended < in.ids.size() ? attended : 0u) << c["text"];
    worst = std::max(worst, worst_diff(e->token_vectors({in}).at(0), masked[q]));
    queries.push_back(std::move(in));
  }
  // All together: each query's keys are hidden in its own sequence only.
  const std::vector<Matrix> together = e->token_vectors(queries);
  for (std::size_t q = 0; q < masked.size(); ++q) worst = std::max(worst, worst_diff(together[q], masked[q]));
  EXPECT_LE(worst, 1e-4);
  std::printf("[lfm2-colbert] masked expansion: query vectors worst %.3g vs PyLate\n", worst);
  // MaxSim of the masked queries against the documents, from the recorded vectors in double.
  std::vector<TokenInput> docs;
  for (const json& d : f_.expected["documents"])
    docs.push_back(as_role(*e, d["text"].get<std::string>(), TextRole::kDocument));
  for (std::size_t q = 0; q < masked.size(); ++q) {
    const std::vector<float> s = e->late_interaction(queries[q], docs);
    for (std::size_t d = 0; d < docs.size(); ++d) {
      const json& dv = f_.expected["documents"][d]["vectors"];
      double want = 0;
      for (const json& qrow : masked[q]) {
        double best = -INFINITY;
        for (const json& drow : dv) {
          double dot = 0;
          for (std::size_t k = 0; k < qrow.size(); ++k) dot += qrow[k].get<double>() * drow[k].get<double>();
          best = std::max(best, dot);
        }
        want += best;
      }
      EXPECT_NEAR(s[d], want, 1e-4 * f_.expected["query_length"].get<double>()) << q << " " << d;
    }
  }
  // Left padding would put the hidden keys before the text: refused.
  patch("padding_side", "left", "tokenizer_config.json");
  const std::string msg = load_error();
  EXPECT_NE(msg.find("tokenizer_config.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("padding_side"), std::string::npos) << msg;
}

TEST_F(Lfm2ColbertSettings, NoQueryExpansion) {
  patch("do_query_expansion", false);
  auto e = Engine::load(dir_, {});
  const TokenInput q = as_role(*e, "a", TextRole::kQuery);
  EXPECT_EQ(q.ids.size(), 3u) << "a, the marker and the EOS token; no expansion";
}

TEST_F(Lfm2ColbertSettings, MarkerMissingFromTheTokenizer) {
  patch("query_prefix", "[QueryMarker]");
  const std::string msg = load_error();
  EXPECT_NE(msg.find("query_prefix"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tokenizer.json"), std::string::npos) << msg;
}

}  // namespace
}  // namespace il::test
