// Qwen3 served: the embedder through /embed, /v1/embeddings and /embed_all, the reranker through
// /rerank, /v1/rerank (with and without an instruction) and /predict, against the transformers
// fixtures (tests/fixtures/qwen3-*); routes a model cannot serve answer 424.
#include <gtest/gtest.h>

#include <cmath>

#include "server_test_util.h"

namespace il::server_test {
namespace {

constexpr double kOracle = 1e-4;  // against transformers, as the oracle suites gate

float sigmoid(double x) { return static_cast<float>(1.0 / (1.0 + std::exp(-x))); }

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

TEST(Qwen3Routes, EmbedderServesEmbeddingsAndHiddenStates) {
  const json expected = cli_test::load_expected("qwen3-embed");
  ServerProcess server("qwen3-embed");
  ASSERT_TRUE(server.started());
  auto c = server.client();
  std::vector<std::string> texts;
  std::vector<json> cases;
  for (const auto& k : expected["cases"])
    if (!k.contains("prompt_name") && !k["text"].get<std::string>().empty()) {
      texts.push_back(k["text"]);
      cases.push_back(k);
    }
  const json embed = body_of(post(c, "/embed", {{"inputs", texts}}));
  ASSERT_EQ(embed.size(), texts.size()) << embed.dump();
  for (std::size_t i = 0; i < texts.size(); ++i)
    EXPECT_LE(max_abs(embed[i].get<std::vector<float>>(), cases[i]["pooled"].get<std::vector<float>>()), kOracle)
        << texts[i];
  const json openai = body_of(post(c, "/v1/embeddings", {{"input", texts[0]}}));
  EXPECT_LE(max_abs(openai["data"][0]["embedding"].get<std::vector<float>>(), cases[0]["pooled"].get<std::vector<float>>()),
            kOracle);
  // A prompt by name, as sentence-transformers applies it.
  for (const auto& k : expected["cases"]) {
    if (!k.contains("prompt_name")) continue;
    const json p = body_of(post(c, "/embed", {{"inputs", k["input_text"]}, {"prompt_name", k["prompt_name"]}}));
    EXPECT_LE(max_abs(p[0].get<std::vector<float>>(), k["pooled"].get<std::vector<float>>()), kOracle)
        << k["input_text"];
  }
  const json all = body_of(post(c, "/embed_all", {{"inputs", cases[0]["text"]}}));
  const auto hidden = cases[0]["hidden"].get<std::vector<std::vector<float>>>();
  ASSERT_EQ(all[0].size(), hidden.size());
  for (std::size_t t = 0; t < hidden.size(); ++t)
    EXPECT_LE(max_abs(all[0][t].get<std::vector<float>>(), hidden[t]), 3e-4) << "token " << t;
  expect_error(post(c, "/rerank", {{"query", "a"}, {"texts", {"b"}}}), 424, "Backend");
  EXPECT_EQ(server.terminate(), 0);
}

TEST(Qwen3Routes, RerankerScoresAsItsModelCard) {
  const json expected = cli_test::load_expected("qwen3-rerank");
  ServerProcess server("qwen3-rerank");
  ASSERT_TRUE(server.started());
  auto c = server.client();
  std::size_t checked = 0;
  for (const auto& k : expected["cases"]) {
    json body{{"query", k["text"]}, {"texts", {k["pair"]}}, {"raw_scores", true}};
    json cohere{{"query", k["text"]}, {"documents", {k["pair"]}}};
    if (k.contains("instruction") && !k["instruction"].is_null()) {
      body["instruction"] = k["instruction"];
      cohere["instruction"] = k["instruction"];
    }
    const double logit = k["scores"][0].get<double>();
    const json r = body_of(post(c, "/rerank", body));
    ASSERT_EQ(r.size(), 1u) << r.dump();
    EXPECT_NEAR(r[0]["score"].get<double>(), logit, kOracle);
    const json v1 = body_of(post(c, "/v1/rerank", cohere));
    EXPECT_NEAR(v1["results"][0]["relevance_score"].get<double>(), k["probability"].get<double>(), 1e-5);
    EXPECT_NEAR(sigmoid(logit), k["probability"].get<double>(), 1e-5);
    ++checked;
  }
  EXPECT_GT(checked, 0u);
  const json info = body_of(c.Get("/info"));
  EXPECT_TRUE(info["model_type"].contains("reranker")) << info.dump();
  expect_error(post(c, "/embed", {{"inputs", "a"}}), 424, "Backend");
  const auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(server.terminate(), 0);
}

TEST(Qwen3Routes, AnInstructionToACrossEncoderWithoutAPromptIs422) {
  ServerProcess server("bert-ce");
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const auto r = post(c, "/rerank", {{"query", "a"}, {"texts", {"b"}}, {"instruction", "x"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 422) << r->body;
  EXPECT_EQ(server.terminate(), 0);
}

}  // namespace
}  // namespace il::server_test
