// nomic-bert served (tests/fixtures/nomic-embed*): /embed, /v1/embeddings (with Matryoshka
// `dimensions`), prompts by name ("search_query: " / "search_document: ") and /embed_all, against
// the contrib arithmetic of tools/oracle/make_nomic_fixtures.py; routes it cannot serve answer 424.
#include <gtest/gtest.h>

#include <cmath>

#include "server_test_util.h"

namespace il::server_test {
namespace {

constexpr double kOracle = 1e-4;  // against the reference, as the oracle suites gate

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

class NomicRoutes : public ::testing::TestWithParam<std::string> {};

TEST_P(NomicRoutes, ServesEmbeddingsPromptsDimensionsAndHiddenStates) {
  const json expected = cli_test::load_expected(GetParam());
  ServerProcess server(GetParam());
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
  // Matryoshka: the first 32 values, re-normalised.
  std::vector<float> cut = cases[0]["pooled_dim32"].get<std::vector<float>>();
  double sq = 0;
  for (float v : cut) sq += static_cast<double>(v) * v;
  for (float& v : cut) v = static_cast<float>(v / std::sqrt(sq));
  const json dims = body_of(post(c, "/v1/embeddings", {{"input", texts[0]}, {"dimensions", 32}}));
  EXPECT_LE(max_abs(dims["data"][0]["embedding"].get<std::vector<float>>(), cut), kOracle);
  std::size_t prompted = 0;
  for (const auto& k : expected["cases"]) {
    if (!k.contains("prompt_name")) continue;
    const json p = body_of(post(c, "/embed", {{"inputs", k["input_text"]}, {"prompt_name", k["prompt_name"]}}));
    EXPECT_LE(max_abs(p[0].get<std::vector<float>>(), k["pooled"].get<std::vector<float>>()), kOracle)
        << k["input_text"];
    ++prompted;
  }
  EXPECT_EQ(prompted, 2u);
  const json all = body_of(post(c, "/embed_all", {{"inputs", cases[0]["text"]}}));
  const auto hidden = cases[0]["hidden"].get<std::vector<std::vector<float>>>();
  ASSERT_EQ(all[0].size(), hidden.size());
  for (std::size_t t = 0; t < hidden.size(); ++t)
    EXPECT_LE(max_abs(all[0][t].get<std::vector<float>>(), hidden[t]), kOracle) << "token " << t;
  expect_error(post(c, "/rerank", {{"query", "a"}, {"texts", {"b"}}}), 424, "Backend");
  EXPECT_EQ(server.terminate(), 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, NomicRoutes, ::testing::Values("nomic-embed", "nomic-embed-rot"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s) if (ch == '-') ch = '_';
                           return s;
                         });

}  // namespace
}  // namespace il::server_test
