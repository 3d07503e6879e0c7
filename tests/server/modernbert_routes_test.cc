// ModernBERT served: the embedder through /embed, /v1/embeddings and /embed_all, the
// ModernBertForSequenceClassification rerankers (mean- and CLS-pooled heads) through /rerank and
// /predict, against the transformers fixtures (tests/fixtures/modernbert-*). The longest texts
// pass the fixtures' 64 tokens: requests ask for truncation, as transformers truncated them.
#include <gtest/gtest.h>

#include <cmath>

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

TEST(ModernBertRoutes, EmbedderServesEmbeddingsAndHiddenStates) {
  const json expected = cli_test::load_expected("modernbert-embed");
  ServerProcess server("modernbert-embed");
  ASSERT_TRUE(server.started());
  auto c = server.client();
  std::vector<std::string> texts;
  std::vector<json> cases;
  for (const auto& k : expected["cases"])
    if (!k["text"].get<std::string>().empty()) {
      texts.push_back(k["text"]);
      cases.push_back(k);
    }
  const json embed = body_of(post(c, "/embed", {{"inputs", texts}, {"truncate", true}}));
  ASSERT_EQ(embed.size(), texts.size()) << embed.dump();
  for (std::size_t i = 0; i < texts.size(); ++i)
    EXPECT_LE(max_abs(embed[i].get<std::vector<float>>(), cases[i]["pooled"].get<std::vector<float>>()), kOracle)
        << texts[i];
  const json openai = body_of(post(c, "/v1/embeddings", {{"input", texts[0]}}));
  EXPECT_LE(max_abs(openai["data"][0]["embedding"].get<std::vector<float>>(), cases[0]["pooled"].get<std::vector<float>>()),
            kOracle);
  const json all = body_of(post(c, "/embed_all", {{"inputs", cases[0]["text"]}}));
  const auto hidden = cases[0]["hidden"].get<std::vector<std::vector<float>>>();
  ASSERT_EQ(all[0].size(), hidden.size());
  for (std::size_t t = 0; t < hidden.size(); ++t)
    EXPECT_LE(max_abs(all[0][t].get<std::vector<float>>(), hidden[t]), kOracle) << "token " << t;
  expect_error(post(c, "/rerank", {{"query", "a"}, {"texts", {"b"}}}), 424, "Backend");
  EXPECT_EQ(server.terminate(), 0);
}

TEST(ModernBertRoutes, RerankersScoreAsTransformers) {
  for (const char* name : {"modernbert-ce", "modernbert-ce-cls"}) {
    const json expected = cli_test::load_expected(name);
    ServerProcess server(name);
    ASSERT_TRUE(server.started()) << name;
    auto c = server.client();
    for (const auto& k : expected["cases"]) {
      const double logit = k["scores"][0].get<double>();
      const json r = body_of(post(c, "/rerank", {{"query", k["text"]}, {"texts", {k["pair"]}}, {"raw_scores", true}, {"truncate", true}}));
      ASSERT_EQ(r.size(), 1u) << r.dump();
      EXPECT_NEAR(r[0]["score"].get<double>(), logit, kOracle) << name << ": " << k["text"];
      const json p = body_of(post(c, "/predict", {{"inputs", json::array({k["text"], k["pair"]})}, {"raw_scores", true}, {"truncate", true}}));
      ASSERT_EQ(p.size(), 1u) << p.dump();
      EXPECT_EQ(p[0]["label"], "LABEL_0");
      EXPECT_NEAR(p[0]["score"].get<double>(), logit, kOracle) << name << ": " << k["text"];
    }
    expect_error(post(c, "/embed", {{"inputs", "a"}}), 424, "Backend");
    EXPECT_EQ(server.terminate(), 0);
  }
}

}  // namespace
}  // namespace il::server_test
