// DeBERTa-v2 / v3 through the command line: `embed --output-kind hidden` on raw ids against
// transformers' last hidden states, embeddings from text, `rerank` (one label and three) against
// the classifier logits, `info`, and `bench --config` on deberta-v3-base's real config with
// random weights (tests/fixtures/deberta-*, tools/oracle/make_deberta_fixtures.py).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_test_util.h"

namespace il::cli_test {
namespace {

using nlohmann::json;

TEST(DebertaCli, HiddenStatesMatchTransformers) {
  for (const char* name :
       {"deberta-embed", "deberta-ce", "deberta-v2-ce", "deberta-v2-conv-ce", "deberta-v2-embproj-ce"}) {
    const json expected = load_expected(name);
    std::vector<std::string> lines;
    std::vector<json> cases;
    for (const char* list : {"cases", "id_cases"})
      for (const auto& c : expected[list]) {
        if (!c.contains("hidden") || c["hidden"].is_null()) continue;
        lines.push_back(json{{"input_ids", c["input_ids"]}, {"token_type_ids", c["token_type_ids"]}}.dump());
        cases.push_back(c);
      }
    ASSERT_FALSE(cases.empty()) << name;
    ScratchDir tmp;
    const auto r = run_cli(cli_args({"embed", "--model", fixture_path(name), "--input", tmp.write("ids.jsonl", lines),
                                     "--output-kind", "hidden", "--device", "cpu"}));
    ASSERT_EQ(r.status, 0) << r.err;
    const auto out = r.lines();
    ASSERT_EQ(out.size(), cases.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      const auto got = parse_line(out[i])["hidden"].get<std::vector<std::vector<float>>>();
      const auto want = cases[i]["hidden"].get<std::vector<std::vector<float>>>();
      ASSERT_EQ(got.size(), want.size()) << name << " case " << i;
      for (std::size_t t = 0; t < got.size(); ++t)
        EXPECT_LE(max_abs_diff(got[t], want[t]), kTolerance) << name << " case " << i << " token " << t;
    }
  }
}

TEST(DebertaCli, EmbeddingsFromTextMatchSentenceTransformers) {
  const json expected = load_expected("deberta-embed");
  std::vector<std::string> lines;
  std::vector<json> cases;
  for (const auto& c : expected["cases"]) {
    if (c.contains("prompt_name") || c["text"].get<std::string>().empty()) continue;  // the CLI refuses empty text
    lines.push_back(json{{"text", c["text"]}}.dump());
    cases.push_back(c);
  }
  ScratchDir tmp;
  const auto r = run_cli(cli_args({"embed", "--model", fixture_path("deberta-embed"), "--input",
                                   tmp.write("texts.jsonl", lines), "--device", "cpu"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto out = r.lines();
  ASSERT_EQ(out.size(), cases.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    EXPECT_LE(max_abs_diff(parse_line(out[i])["embedding"].get<std::vector<float>>(),
                           cases[i]["pooled"].get<std::vector<float>>()),
              kTolerance)
        << cases[i]["text"];
}

TEST(DebertaCli, RerankMatchesTheClassifierLogits) {
  for (const char* name : {"deberta-ce", "deberta-v2-ce"}) {
    const json expected = load_expected(name);
    std::vector<std::string> lines;
    for (const auto& c : expected["cases"]) lines.push_back(json{{"query", c["text"]}, {"document", c["pair"]}}.dump());
    ScratchDir tmp;
    const auto r = run_cli(cli_args({"rerank", "--model", fixture_path(name), "--input",
                                     tmp.write("pairs.jsonl", lines), "--device", "cpu"}));
    ASSERT_EQ(r.status, 0) << r.err;
    const auto out = r.lines();
    ASSERT_EQ(out.size(), expected["cases"].size());
    const std::size_t labels = expected["num_labels"].get<std::size_t>();
    for (std::size_t i = 0; i < out.size(); ++i) {
      const json j = parse_line(out[i]);
      const auto want = expected["cases"][i]["scores"].get<std::vector<float>>();
      const std::vector<float> got =
          labels == 1 ? std::vector<float>{j["score"].get<float>()} : j["scores"].get<std::vector<float>>();
      EXPECT_LE(max_abs_diff(got, want), kTolerance) << name << " case " << i;
    }
  }
}

TEST(DebertaCli, InfoDescribesTheClassifier) {
  const auto r = run_cli(cli_args({"info", "--model", fixture_path("deberta-v2-ce"), "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const json info = json::parse(r.out);
  EXPECT_EQ(info["model_type"], "deberta-v2") << r.out;
  EXPECT_EQ(info["labels"], json({"contradiction", "entailment", "neutral"})) << r.out;
  const auto human = run_cli(cli_args({"info", "--model", fixture_path("deberta-embed")}));
  ASSERT_EQ(human.status, 0) << human.err;
  EXPECT_NE(human.out.find("disentangled"), std::string::npos) << human.out;
}

TEST(DebertaCli, BenchBuildsDebertaV3BaseWithRandomWeights) {
  // <source>/tests/fixtures/<name> → <source>/bench/configs
  const std::string config =
      (fixture_dir("deberta-embed").parent_path().parent_path().parent_path() / "bench" / "configs" /
       "deberta-v3-base.json")
          .string();
  const auto r = run_cli(cli_args({"bench", "--config", config, "--grid", "1x16", "--warmup", "1", "--iters", "1",
                                   "--threads", "2", "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = r.lines();
  ASSERT_EQ(lines.size(), 1u) << r.out;
  const json j = parse_line(lines[0]);
  EXPECT_EQ(j["batch"], 1);
  EXPECT_EQ(j["len"], 16);
  EXPECT_GT(j["p50_ms"].get<double>(), 0.0);
}

}  // namespace
}  // namespace il::cli_test
