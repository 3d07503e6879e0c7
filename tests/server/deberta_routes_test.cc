// DeBERTa served: the embedder through /embed and /embed_all, the classifiers through /rerank
// (one label) and /predict (three named labels), against the transformers fixtures
// (tests/fixtures/deberta-*). The longest fixture texts pass the 128-token limit, which the
// fixtures' tokenizer truncates: the requests ask for truncation.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "server_test_util.h"

namespace il::server_test {
namespace {

constexpr double kOracle = 1e-4;  // against transformers, as the oracle suites gate

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

TEST(DebertaRoutes, EmbedderServesEmbeddingsAndHiddenStates) {
  const json expected = cli_test::load_expected("deberta-embed");
  ServerProcess server("deberta-embed");
  ASSERT_TRUE(server.started());
  auto c = server.client();
  std::vector<std::string> texts;
  std::vector<json> cases;
  for (const auto& k : expected["cases"])
    if (!k.contains("prompt_name") && !k["text"].get<std::string>().empty()) {
      texts.push_back(k["text"]);
      cases.push_back(k);
    }
  const json embed = body_of(post(c, "/embed", {{"inputs", texts}, {"truncate", true}}));
  ASSERT_EQ(embed.size(), texts.size()) << embed.dump();
  for (std::size_t i = 0; i < texts.size(); ++i)
    EXPECT_LE(max_abs(embed[i].get<std::vector<float>>(), cases[i]["pooled"].get<std::vector<float>>()), kOracle)
        << texts[i];
  const json all = body_of(post(c, "/embed_all", {{"inputs", cases[0]["text"]}}));
  const auto hidden = cases[0]["hidden"].get<std::vector<std::vector<float>>>();
  ASSERT_EQ(all[0].size(), hidden.size());
  for (std::size_t t = 0; t < hidden.size(); ++t)
    EXPECT_LE(max_abs(all[0][t].get<std::vector<float>>(), hidden[t]), kOracle) << "token " << t;
  EXPECT_EQ(server.terminate(), 0);
}

TEST(DebertaRoutes, CrossEncoderRerankGivesTheLogits) {
  const json expected = cli_test::load_expected("deberta-ce");
  ServerProcess server("deberta-ce");
  ASSERT_TRUE(server.started());
  auto c = server.client();
  for (const auto& k : expected["cases"]) {
    const json r = body_of(post(c, "/rerank", {{"query", k["text"]}, {"texts", {k["pair"]}}, {"raw_scores", true}, {"truncate", true}}));
    ASSERT_EQ(r.size(), 1u) << r.dump();
    EXPECT_NEAR(r[0]["score"].get<double>(), k["scores"][0].get<double>(), kOracle) << k["text"];
  }
  EXPECT_EQ(server.terminate(), 0);
}

TEST(DebertaRoutes, ThreeLabelClassifierPredictsByName) {
  const json expected = cli_test::load_expected("deberta-v2-ce");
  ServerProcess server("deberta-v2-ce");
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const std::vector<std::string> names = {"contradiction", "entailment", "neutral"};
  for (const auto& k : expected["cases"]) {
    const json answer =
        body_of(post(c, "/predict", {{"inputs", json::array({k["text"], k["pair"]})}, {"raw_scores", true}, {"truncate", true}}));
    std::map<std::string, float> by_label;
    for (const json& s : answer) by_label[s.at("label").get<std::string>()] = s.at("score").get<float>();
    ASSERT_EQ(by_label.size(), 3u) << answer.dump();
    for (std::size_t i = 0; i < names.size(); ++i)
      EXPECT_NEAR(by_label.at(names[i]), k["scores"][i].get<double>(), kOracle) << names[i] << " " << k["text"];
  }
  EXPECT_EQ(server.terminate(), 0);
}

}  // namespace
}  // namespace il::server_test
