// /rerank, /predict and /v1/rerank on the cross-encoder fixtures, compared with
// `inferencelayer rerank` for the same pairs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "server_test_util.h"

namespace il::server_test {
namespace {

const std::string kQuery = "what is the capital of france";
const std::vector<std::string> kDocs = {"paris is the capital of france", "berlin is in germany",
                                        "the weather is nice", ""};

float sigmoid(float x) { return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x)))); }

class RerankRoutes : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(GetParam());
    ASSERT_TRUE(server_->started());
  }
  void TearDown() override { EXPECT_EQ(server_->terminate(), 0); }
  std::unique_ptr<ServerProcess> server_;
};

TEST_P(RerankRoutes, RerankEqualsTheCliSortedByScore) {
  auto c = server_->client();
  const auto logits = cli_scores(GetParam(), kQuery, kDocs);
  for (const bool raw : {false, true}) {
    const auto r = post(c, "/rerank", {{"query", kQuery}, {"texts", kDocs}, {"raw_scores", raw}, {"return_text", true}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_TRUE(r->has_header("x-inference-time"));
    const json j = json::parse(r->body);
    ASSERT_EQ(j.size(), kDocs.size());
    std::vector<bool> seen(kDocs.size());
    for (std::size_t k = 0; k < j.size(); ++k) {
      const std::size_t i = j[k]["index"].get<std::size_t>();
      ASSERT_LT(i, kDocs.size());
      seen[i] = true;
      const float want = raw ? logits[i] : sigmoid(logits[i]);
      EXPECT_NEAR(j[k]["score"].get<float>(), want, kTolerance);
      EXPECT_EQ(j[k]["text"], kDocs[i]);
      if (k > 0) {
        EXPECT_GE(j[k - 1]["score"].get<float>(), j[k]["score"].get<float>());
      }
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](bool b) { return b; }));
  }
  const json no_text = body_of(post(c, "/rerank", {{"query", kQuery}, {"texts", kDocs}}));
  EXPECT_FALSE(no_text[0].contains("text"));
}

TEST_P(RerankRoutes, CohereStyleRerankHonoursTopNAndReturnDocuments) {
  auto c = server_->client();
  const auto logits = cli_scores(GetParam(), kQuery, kDocs);
  const json j = body_of(post(c, "/v1/rerank", {{"query", kQuery}, {"documents", kDocs}, {"top_n", 2}, {"model", "x"}}));
  ASSERT_TRUE(j.contains("results")) << j.dump();
  ASSERT_EQ(j["results"].size(), 2u);
  const std::size_t best = static_cast<std::size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  EXPECT_EQ(j["results"][0]["index"], best);
  EXPECT_NEAR(j["results"][0]["relevance_score"].get<float>(), sigmoid(logits[best]), kTolerance);
  EXPECT_EQ(j["results"][0]["document"]["text"], kDocs[best]);
  EXPECT_GT(j["usage"]["total_tokens"].get<int>(), 0);
  const json bare = body_of(post(c, "/v1/rerank", {{"query", kQuery}, {"documents", {{{"text", kDocs[0]}}}},
                                                   {"return_documents", false}}));
  ASSERT_EQ(bare["results"].size(), 1u);
  EXPECT_FALSE(bare["results"][0].contains("document"));
  std::string long_doc;
  for (int i = 0; i < 100; ++i) long_doc += "paris ";
  const auto cut = post(c, "/v1/rerank", {{"query", kQuery}, {"documents", {long_doc}}});
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->status, 200) << cut->body;
  expect_error(post(c, "/v1/rerank", {{"query", kQuery}, {"documents", {long_doc}}, {"truncate", false}}), 422, "Tokenizer");
}

TEST_P(RerankRoutes, PredictScoresPairsAsTheCli) {
  auto c = server_->client();
  const auto logits = cli_scores(GetParam(), kQuery, kDocs);
  const json single = body_of(post(c, "/predict", {{"inputs", json::array({kQuery, kDocs[0]})}, {"raw_scores", true}}));
  ASSERT_TRUE(single.is_array()) << single.dump();
  EXPECT_NEAR(single[0]["score"].get<float>(), logits[0], kTolerance);
  EXPECT_EQ(single[0]["label"], "LABEL_0");
  const json batch = body_of(post(c, "/predict", {{"inputs", json::array({json::array({kQuery, kDocs[1]}), json::array({kQuery, kDocs[2]})})}}));
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_NEAR(batch[0][0]["score"].get<float>(), sigmoid(logits[1]), kTolerance);
  EXPECT_NEAR(batch[1][0]["score"].get<float>(), sigmoid(logits[2]), kTolerance);
}

TEST_P(RerankRoutes, EmbeddingRoutesAnswer424) {
  auto c = server_->client();
  expect_error(post(c, "/embed", {{"inputs", "a"}}), 424, "Backend");
  expect_error(post(c, "/v1/embeddings", {{"input", "a"}}), 424, "Backend");
  expect_error(post(c, "/embed_all", {{"inputs", "a"}}), 424, "Backend");
}

TEST_P(RerankRoutes, HealthRunsAForwardPass) {
  auto c = server_->client();
  const auto r = c.Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  const json info = body_of(c.Get("/info"));
  EXPECT_TRUE(info["model_type"].contains("reranker")) << info.dump();
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RerankRoutes, ::testing::Values("bert-ce", "xlmr-ce", "jina-ce"));

TEST(ClassifierRoutes, MultiLabelModelPredictsEveryLabelAndRefusesRerank) {
  ServerProcess server("xlmr-ce2");
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const json info = body_of(c.Get("/info"));
  ASSERT_TRUE(info["model_type"].contains("classifier")) << info.dump();
  const std::size_t labels = info["model_type"]["classifier"]["id2label"].size();
  ASSERT_GE(labels, 2u);
  const json p = body_of(post(c, "/predict", {{"inputs", json::array({kQuery, kDocs[0]})}}));
  ASSERT_EQ(p.size(), labels) << p.dump();
  double sum = 0;
  for (std::size_t i = 0; i < labels; ++i) {
    sum += p[i]["score"].get<double>();
    if (i > 0) {
      EXPECT_GE(p[i - 1]["score"].get<float>(), p[i]["score"].get<float>());
    }
  }
  EXPECT_NEAR(sum, 1.0, 1e-5);  // softmax over the labels
  expect_error(post(c, "/rerank", {{"query", "a"}, {"texts", {"b"}}}), 424, "Backend");
  EXPECT_EQ(server.terminate(), 0);
}

}  // namespace
}  // namespace il::server_test
