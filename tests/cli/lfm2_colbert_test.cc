// LFM2-ColBERT through the command line (tests/fixtures/lfm2-colbert,
// tools/oracle/make_lfm2_colbert_fixtures.py): `embed --output-kind tokens --role query|document`
// against PyLate's per-token vectors, `rerank` scoring by MaxSim (human and JSONL forms), `info`,
// and the pooled output refused.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace il::cli_test {
namespace {

using nlohmann::json;

constexpr double kVectorTolerance = 1e-4;  // as the oracle suite gates the fixture

void expect_vectors(const json& got, const json& want, const std::string& what) {
  const auto g = got.get<std::vector<std::vector<float>>>();
  const auto w = want.get<std::vector<std::vector<float>>>();
  ASSERT_EQ(g.size(), w.size()) << what;
  for (std::size_t t = 0; t < g.size(); ++t) EXPECT_LE(max_abs_diff(g[t], w[t]), kVectorTolerance) << what << " token " << t;
}

TEST(Lfm2ColbertCli, TokenVectorsOfQueriesAndDocuments) {
  const json expected = load_expected("lfm2-colbert");
  for (const char* role : {"query", "document"}) {
    const json& cases = expected[std::string(role) == "query" ? "queries" : "documents"];
    std::vector<std::string> lines;
    for (const auto& c : cases) lines.push_back(json{{"text", c["text"]}}.dump());
    ScratchDir tmp;
    const auto r = run_cli(cli_args({"embed", "--model", fixture_path("lfm2-colbert"), "--input",
                                     tmp.write("texts.jsonl", lines), "--output-kind", "tokens", "--role", role,
                                     "--device", "cpu"}));
    ASSERT_EQ(r.status, 0) << r.err;
    const auto out = r.lines();
    ASSERT_EQ(out.size(), cases.size());
    for (std::size_t i = 0; i < out.size(); ++i)
      expect_vectors(parse_line(out[i])["tokens"], cases[i]["vectors"], std::string(role) + " " + std::to_string(i));
  }
  // PyLate's default is a query.
  const json& q = expected["queries"][1];
  const auto r = run_cli(cli_args({"embed", "--model", fixture_path("lfm2-colbert"), "--output-kind", "tokens",
                                   "--device", "cpu", q["text"].get<std::string>()}));
  ASSERT_EQ(r.status, 0) << r.err;
  expect_vectors(parse_line(r.lines().at(0))["tokens"], q["vectors"], "default role");
}

TEST(Lfm2ColbertCli, RerankScoresByMaxSim) {
  const json expected = load_expected("lfm2-colbert");
  const json& docs = expected["documents"];
  // JSONL: every (query, document) line; lines of one query are scored together.
  std::vector<std::string> lines;
  std::vector<double> want;
  for (std::size_t q = 0; q < expected["queries"].size(); ++q)
    for (std::size_t d = 0; d < docs.size(); ++d) {
      lines.push_back(json{{"query", expected["queries"][q]["text"]}, {"document", docs[d]["text"]}}.dump());
      want.push_back(expected["scores"][q][d].get<double>());
    }
  ScratchDir tmp;
  const auto r = run_cli(cli_args({"rerank", "--model", fixture_path("lfm2-colbert"), "--input",
                                   tmp.write("pairs.jsonl", lines), "--device", "cpu"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto out = r.lines();
  ASSERT_EQ(out.size(), want.size());
  const double tol = 1e-4 * expected["query_length"].get<double>();
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(parse_line(out[i])["score"].get<double>(), want[i], tol) << i;
  // Human form: the table, best first.
  std::vector<std::string> args = {"rerank", "--model", fixture_path("lfm2-colbert"), "--device", "cpu", "--query",
                                   expected["queries"][0]["text"].get<std::string>()};
  for (const auto& d : docs) args.push_back(d["text"].get<std::string>());
  const auto h = run_cli(cli_args(args));
  ASSERT_EQ(h.status, 0) << h.err;
  std::size_t best = 0;
  for (std::size_t d = 1; d < docs.size(); ++d)
    if (expected["scores"][0][d].get<double>() > expected["scores"][0][best].get<double>()) best = d;
  const auto table = h.lines();
  ASSERT_EQ(table.size(), docs.size() + 1);
  EXPECT_NE(table[1].find(docs[best]["text"].get<std::string>().substr(0, 20)), std::string::npos) << table[1];
  // Token-id lines cannot be split into a query and a document.
  const auto ids = run_cli(cli_args({"rerank", "--model", fixture_path("lfm2-colbert"), "--input",
                                     tmp.write("ids.jsonl", {R"({"input_ids":[1,2,3]})"}), "--device", "cpu"}));
  EXPECT_EQ(ids.status, 2);
  expect_contains(ids.err, {"line 1", "query"});
}

TEST(Lfm2ColbertCli, InfoAndRefusals) {
  const auto r = run_cli(cli_args({"info", "--model", fixture_path("lfm2-colbert"), "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = parse_line(r.out);
  EXPECT_EQ(j["layout"], "lfm2-colbert");
  EXPECT_EQ(j["capabilities"], json({"hidden_states", "multi_vector"}));
  const auto pooled = run_cli(cli_args({"embed", "--model", fixture_path("lfm2-colbert"), "--device", "cpu", "a"}));
  EXPECT_NE(pooled.status, 0);
  expect_contains(pooled.err, {"multi-vector", "--output-kind tokens"});
  const auto role = run_cli(cli_args({"embed", "--model", fixture_path("lfm2-colbert"), "--device", "cpu", "--role",
                                      "query", "--output-kind", "hidden", "a"}));
  EXPECT_NE(role.status, 0);
  expect_contains(role.err, {"--role"});
  const auto not_colbert = run_cli(cli_args({"embed", "--model", fixture_path("lfm2-hidden"), "--device", "cpu",
                                             "--output-kind", "tokens", "a"}));
  EXPECT_NE(not_colbert.status, 0);
  expect_contains(not_colbert.err, {"multi-vector"});
}

}  // namespace
}  // namespace il::cli_test
