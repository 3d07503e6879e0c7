// LFM2-ColBERT served (tests/fixtures/lfm2-colbert): /embed_all gives the vector of every kept
// token (queries by default, documents with "is_query": false), /rerank and /v1/rerank score by
// MaxSim against PyLate's numbers, and the pooled routes (/embed, /v1/embeddings) answer 424
// naming the multi-vector model.
#include <gtest/gtest.h>

#include <cmath>

#include "server_test_util.h"

namespace il::server_test {
namespace {

constexpr double kOracle = 1e-4;

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

void expect_tokens(const json& got, const json& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t t = 0; t < want.size(); ++t)
    EXPECT_LE(max_abs(got[t].get<std::vector<float>>(), want[t].get<std::vector<float>>()), kOracle)
        << what << " token " << t;
}

TEST(Lfm2ColbertRoutes, TokenVectorsMaxSimAndRefusals) {
  const json expected = cli_test::load_expected("lfm2-colbert");
  ServerProcess server("lfm2-colbert");
  ASSERT_TRUE(server.started());
  auto c = server.client();
  std::vector<std::string> queries, docs;
  for (const auto& q : expected["queries"]) queries.push_back(q["text"]);
  for (const auto& d : expected["documents"]) docs.push_back(d["text"]);

  const json q = body_of(post(c, "/embed_all", {{"inputs", queries}}));
  ASSERT_EQ(q.size(), queries.size()) << q.dump();
  for (std::size_t i = 0; i < queries.size(); ++i) expect_tokens(q[i], expected["queries"][i]["vectors"], queries[i]);
  const json d = body_of(post(c, "/embed_all", {{"inputs", docs}, {"is_query", false}}));
  ASSERT_EQ(d.size(), docs.size()) << d.dump();
  for (std::size_t i = 0; i < docs.size(); ++i) expect_tokens(d[i], expected["documents"][i]["vectors"], docs[i]);

  const double tol = 1e-4 * expected["query_length"].get<double>();
  for (std::size_t qi = 0; qi < queries.size(); ++qi) {
    const json tei = body_of(post(c, "/rerank", {{"query", queries[qi]}, {"texts", docs}}));
    ASSERT_EQ(tei.size(), docs.size()) << tei.dump();
    for (std::size_t k = 0; k < tei.size(); ++k) {
      const std::size_t i = tei[k]["index"];
      EXPECT_NEAR(tei[k]["score"].get<double>(), expected["scores"][qi][i].get<double>(), tol) << qi << " " << i;
      if (k > 0) {
        EXPECT_GE(tei[k - 1]["score"].get<double>(), tei[k]["score"].get<double>());
      }
    }
  }
  const json cohere = body_of(post(c, "/v1/rerank", {{"query", queries[0]}, {"documents", docs}, {"top_n", 2}}));
  ASSERT_EQ(cohere["results"].size(), 2u) << cohere.dump();
  for (const auto& item : cohere["results"])
    EXPECT_NEAR(item["relevance_score"].get<double>(),
                expected["scores"][0][item["index"].get<std::size_t>()].get<double>(), tol);

  const auto embed = post(c, "/embed", {{"inputs", "a"}});
  expect_error(embed, 424, "Backend");
  EXPECT_NE(embed->body.find("multi-vector"), std::string::npos) << embed->body;
  const auto openai = post(c, "/v1/embeddings", {{"input", "a"}});
  ASSERT_TRUE(openai);
  EXPECT_EQ(openai->status, 424);
  EXPECT_NE(openai->body.find("multi-vector"), std::string::npos) << openai->body;
  EXPECT_EQ(server.terminate(), 0);
}

}  // namespace
}  // namespace il::server_test
