// `inferencelayer rerank` against the transformers logits in the cross-encoder fixtures.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace il::cli_test {
namespace {

using nlohmann::json;

// One row of logits per output line: {"score": x} or {"scores": [...]}.
std::vector<std::vector<float>> scores(const RunResult& r) {
  std::vector<std::vector<float>> v;
  for (const auto& line : r.lines()) {
    const json j = parse_line(line);
    if (j.contains("score")) v.push_back({j["score"].get<float>()});
    else if (j.contains("scores")) v.push_back(j["scores"].get<std::vector<float>>());
    else ADD_FAILURE() << "line without a score: " << line;
  }
  return v;
}

class RerankTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    expected_ = load_expected(GetParam());
    dir_ = fixture_path(GetParam());
    ASSERT_TRUE(expected_.contains("cases"));
  }
  RunResult rerank(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"rerank", "--model", dir_};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(cli_args(args));
  }
  void check_against(const RunResult& r, const json& cases) {
    ASSERT_EQ(r.status, 0) << r.err;
    const auto got = scores(r);
    ASSERT_EQ(got.size(), cases.size());
    const std::size_t labels = expected_.value("num_labels", 1);
    for (std::size_t i = 0; i < got.size(); ++i) {
      const auto want = cases[i]["scores"].get<std::vector<float>>();
      ASSERT_EQ(want.size(), labels);
      EXPECT_LE(max_abs_diff(got[i], want), kTolerance) << "case " << i;
    }
    // One label: a bare number; several: an array.
    const json first = parse_line(r.lines().at(0));
    EXPECT_EQ(first.contains("score"), labels == 1) << r.lines().at(0);
  }

  json expected_;
  std::string dir_;
  ScratchDir tmp_;
};

TEST_P(RerankTest, QueryDocumentLinesMatchTransformers) {
  std::vector<std::string> lines;
  for (const auto& c : expected_["cases"]) lines.push_back(json{{"query", c["text"]}, {"document", c["pair"]}}.dump());
  check_against(rerank({"--input", tmp_.write("pairs.jsonl", lines)}), expected_["cases"]);
}

TEST_P(RerankTest, TokenIdLinesMatchTransformers) {
  ASSERT_TRUE(expected_.contains("id_cases"));
  std::vector<std::string> lines;
  for (const auto& c : expected_["id_cases"])
    lines.push_back(json{{"input_ids", c["input_ids"]}, {"token_type_ids", c["token_type_ids"]}}.dump());
  check_against(rerank({"-i", tmp_.write("ids.jsonl", lines)}), expected_["id_cases"]);
}

TEST_P(RerankTest, StdinIsTheDefaultInput) {
  std::vector<std::string> lines;
  for (const auto& c : expected_["cases"]) lines.push_back(json{{"query", c["text"]}, {"document", c["pair"]}}.dump());
  const auto r = run_cli(cli_args({"rerank", "-m", dir_}), tmp_.write("pairs.jsonl", lines));
  check_against(r, expected_["cases"]);
}

// The human form ranks documents best first, with the scores the JSONL form gives.
TEST_P(RerankTest, QueryFormPrintsARankedTable) {
  const std::string query = expected_["cases"][0]["text"];
  std::vector<std::string> docs, lines;
  for (const auto& c : expected_["cases"]) {
    const std::string d = c["pair"];
    if (d.empty() || d[0] == '-' || d.find('\n') != std::string::npos) continue;
    docs.push_back(d);
    lines.push_back(json{{"query", query}, {"document", d}}.dump());
  }
  const auto ref = scores(rerank({"-i", tmp_.write("q.jsonl", lines)}));
  ASSERT_EQ(ref.size(), docs.size());

  std::vector<std::string> args = {"--query", query};
  args.insert(args.end(), docs.begin(), docs.end());
  const auto r = rerank(args);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto table = r.lines();
  ASSERT_EQ(table.size(), docs.size() + 1) << r.out;  // header + one row per document
  double prev = 1e30;
  for (std::size_t i = 1; i < table.size(); ++i) {
    std::istringstream row(table[i]);
    std::size_t rank = 0;
    double score = 0;
    row >> rank >> score;
    EXPECT_EQ(rank, i);
    EXPECT_LE(score, prev + 1e-9) << "not sorted: " << r.out;
    prev = score;
    // The row's document is one of the inputs, with the score JSONL gave it (to 4 decimals).
    bool found = false;
    for (std::size_t d = 0; d < docs.size(); ++d)
      if (table[i].size() >= docs[d].size() && table[i].compare(table[i].size() - docs[d].size(), docs[d].size(), docs[d]) == 0 &&
          std::abs(ref[d][0] - score) <= 6e-5)
        found = true;
    EXPECT_TRUE(found) << table[i];
  }
}

TEST_P(RerankTest, EmbedRefusesACrossEncoder) {
  const auto r = run_cli(cli_args({"embed", "-m", dir_, "hello"}));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("rerank"), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RerankTest, ::testing::Values("bert-ce", "xlmr-ce", "jina-ce", "xlmr-ce2", "deberta-ce", "deberta-v2-ce"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace il::cli_test
