// `inferencelayer info`, `bench` and `--help`.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_test_util.h"

namespace il::cli_test {
namespace {

using nlohmann::json;

class InfoTest : public ::testing::TestWithParam<std::string> {};

TEST_P(InfoTest, JsonDescribesTheFolder) {
  const json want = load_expected(GetParam());
  const auto r = run_cli(cli_args({"info", "--model", fixture_path(GetParam()), "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.lines().size(), 1u) << r.out;
  const json info = parse_line(r.lines()[0]);
  for (const char* key : {"architecture", "layout", "kind", "hidden", "layers", "heads", "vocab", "max_tokens",
                          "dtype", "parameters", "weight_bytes", "pooling", "normalize", "output_dim", "tokenizer",
                          "prompts", "random_weights", "num_labels"})
    EXPECT_TRUE(info.contains(key)) << key << " missing from " << r.out;
  EXPECT_EQ(info["random_weights"], true);
  EXPECT_EQ(info["max_tokens"], want["max_length"]);
  EXPECT_TRUE(info["tokenizer"].is_string());
  EXPECT_GT(info["parameters"].get<double>(), 0);
  if (want["kind"] == "embedding") {
    EXPECT_EQ(info["kind"], "embedding");
    EXPECT_EQ(info["pooling"], want["pooling"]);
    EXPECT_EQ(info["normalize"], want["normalize"]);
    EXPECT_EQ(info["output_dim"], want["cases"][0]["pooled"].size());
    for (const auto& c : want["cases"]) {
      if (c.contains("prompt_name")) {
        EXPECT_TRUE(info["prompts"].contains(c["prompt_name"].get<std::string>()));
      }
    }
  } else {
    EXPECT_EQ(info["kind"], "cross-encoder");
    EXPECT_EQ(info["num_labels"], want.value("num_labels", 1));
  }
}

TEST_P(InfoTest, HumanFormNamesTheRandomWeights) {
  const auto r = run_cli(cli_args({"info", "-m", fixture_path(GetParam())}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("architecture"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("random weights"), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, InfoTest,
                         ::testing::Values("bert-mean", "bert-cls", "bert-ce", "xlmr-ce", "jina-ce", "xlmr-ce2",
                                           "modernbert-embed", "modernbert-ce",
                                           "nomic-embed", "nomic-embed-rot", "deberta-embed",
                                           "deberta-ce", "deberta-v2-ce"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) if (c == '-') c = '_';
                           return s;
                         });

TEST(BenchTest, RandomWeightsFromAConfigGiveOneJsonLinePerPoint) {
  const std::string config = (fixture_dir("bert-mean") / "config.json").string();
  const auto r = run_cli(cli_args({"bench", "--config", config, "--grid", "1x8,2x16", "--mixed", "3:4:16",
                                   "--warmup", "1", "--iters", "3", "--threads", "2", "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = r.lines();
  ASSERT_EQ(lines.size(), 3u) << r.out;
  const std::vector<std::pair<int, int>> shapes = {{1, 8}, {2, 16}};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const json j = parse_line(lines[i]);
    for (const char* key : {"impl", "model", "device", "threads", "batch", "len", "p50_ms", "p90_ms", "tokens_per_s"})
      EXPECT_TRUE(j.contains(key)) << key << " missing from " << lines[i];
    EXPECT_EQ(j["impl"], "inferencelayer");
    EXPECT_EQ(j["device"], "cpu");
    EXPECT_EQ(j["threads"], 2);
    EXPECT_EQ(j["model"], "bert-mean");
    EXPECT_GT(j["p50_ms"].get<double>(), 0.0);
    EXPECT_GE(j["p90_ms"].get<double>(), j["p50_ms"].get<double>());
    EXPECT_GT(j["tokens_per_s"].get<double>(), 0.0);
    if (i < shapes.size()) {
      EXPECT_EQ(j["batch"], shapes[i].first);
      EXPECT_EQ(j["len"], shapes[i].second);
    } else {
      EXPECT_EQ(j["batch"], 3);
      EXPECT_EQ(j["mixed"], json::array({4, 16}));
      EXPECT_GE(j["len"].get<int>(), 4);
      EXPECT_LE(j["len"].get<int>(), 16);
    }
  }
}

TEST(BenchTest, FolderWeightsAndTheHumanTable) {
  const auto r = run_cli(cli_args({"bench", "--model", fixture_path("xlmr-ce"), "--grid", "2x8", "--iters", "2"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.lines().size(), 3u) << r.out;  // title, header, one point
  EXPECT_NE(r.out.find("p50 ms"), std::string::npos) << r.out;
}

TEST(BenchTest, RefusesLengthsBeyondThePositionTable) {
  const auto r = run_cli(cli_args({"bench", "--model", fixture_path("bert-ce"), "--grid", "1x4096", "--iters", "1"}));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("inferencelayer: error:"), std::string::npos) << r.err;
}

TEST(HelpTest, EverySubcommandHasHelp) {
  for (const char* sub : {"", "embed", "rerank", "tokenize", "info", "bench"}) {
    const std::string args = std::string(*sub ? " " : "") + sub + " --help";
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 0) << args << ": " << r.err;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << args << ": " << r.out;
  }
}

}  // namespace
}  // namespace il::cli_test
