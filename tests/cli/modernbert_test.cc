// ModernBERT through the command line, as the issue checks it: `embed --output-kind hidden`
// against transformers' last hidden states (the final norm applied), embeddings from text against
// sentence-transformers, `rerank` against ModernBertForSequenceClassification's logits (mean- and
// CLS-pooled heads), `info`, and `bench --config` on the real ModernBERT-base config with random
// weights.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace il::cli_test {
namespace {

using nlohmann::json;

TEST(ModernBertCli, HiddenStatesMatchTransformers) {
  for (const char* name : {"modernbert-embed", "modernbert-ce", "modernbert-ce-cls"}) {
    const json expected = load_expected(name);
    std::vector<std::string> lines;
    std::vector<json> cases;
    for (const char* list : {"cases", "id_cases"})
      for (const auto& c : expected[list]) {
        if (!c.contains("hidden") || c["hidden"].is_null()) continue;
        lines.push_back(json{{"input_ids", c["input_ids"]}}.dump());
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

TEST(ModernBertCli, EmbeddingsFromTextMatchSentenceTransformers) {
  const json expected = load_expected("modernbert-embed");
  std::vector<std::string> lines;
  std::vector<json> cases;
  for (const auto& c : expected["cases"]) {
    if (c["text"].get<std::string>().empty()) continue;  // the CLI refuses empty text
    lines.push_back(json{{"text", c["text"]}}.dump());
    cases.push_back(c);
  }
  ScratchDir tmp;
  const auto r = run_cli(cli_args({"embed", "--model", fixture_path("modernbert-embed"), "--input",
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

// Pairs go through the WordPiece template, whose second segment has type id 1: the model has no
// segment table and transformers passes none, so the engine must drop them, not refuse the pair.
TEST(ModernBertCli, RerankScoresMatchTransformers) {
  for (const char* name : {"modernbert-ce", "modernbert-ce-cls"}) {
    const json expected = load_expected(name);
    std::vector<std::string> lines;
    for (const auto& c : expected["cases"]) lines.push_back(json{{"query", c["text"]}, {"document", c["pair"]}}.dump());
    ScratchDir tmp;
    const auto r = run_cli(cli_args({"rerank", "--model", fixture_path(name), "--input",
                                     tmp.write("pairs.jsonl", lines), "--device", "cpu"}));
    ASSERT_EQ(r.status, 0) << r.err;
    const auto out = r.lines();
    ASSERT_EQ(out.size(), expected["cases"].size());
    for (std::size_t i = 0; i < out.size(); ++i)
      EXPECT_NEAR(parse_line(out[i])["score"].get<double>(), expected["cases"][i]["scores"][0].get<double>(),
                  kTolerance)
          << name << " case " << i;
  }
}

TEST(ModernBertCli, InfoNamesTheArchitecture) {
  const auto r = run_cli(cli_args({"info", "--model", fixture_path("modernbert-ce"), "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const json info = parse_line(r.lines().at(0));
  EXPECT_EQ(info["architecture"], "ModernBertForSequenceClassification");
  EXPECT_EQ(info["layout"], "modernbert");
  EXPECT_EQ(info["kind"], "cross-encoder");
  EXPECT_EQ(info["layers"], 3);
}

// The real release config (bench/configs/modernbert-base.json: 22 layers, every third global,
// window 128) builds with random weights and runs, sequences longer than the window included.
TEST(ModernBertCli, BenchTakesTheModernBertBaseConfig) {
  const auto config = fixture_dir("bert-mean").parent_path().parent_path().parent_path() / "bench" / "configs" /
                      "modernbert-base.json";
  const auto r = run_cli(cli_args({"bench", "--config", config.string(), "--grid", "1x16,1x160", "--warmup", "0",
                                   "--iters", "1", "--threads", "2", "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = r.lines();
  ASSERT_EQ(lines.size(), 2u) << r.out;
  for (const auto& line : lines) {
    const json j = parse_line(line);
    EXPECT_EQ(j["model"], "modernbert-base");
    EXPECT_GT(j["p50_ms"].get<double>(), 0.0);
  }
}

// A config.json that disagrees with its checkpoint, or names what is not implemented, is refused
// at load naming the file and the field.
TEST(ModernBertCli, ConfigFieldsDisagreeingWithTheCheckpointAreRefused) {
  struct Case {
    const char* fixture;
    std::function<void(json&)> edit;
    std::vector<std::string> parts;  // beyond the file
  };
  const std::vector<Case> cases = {
      {"modernbert-ce-cls", [](json& j) { j["attention_bias"] = false; }, {"\"attention_bias\"", "attn.Wqkv.bias"}},
      {"modernbert-ce-cls", [](json& j) { j["norm_bias"] = false; }, {"\"norm_bias\"", "final_norm.bias"}},
      {"modernbert-ce-cls", [](json& j) { j["classifier_bias"] = false; }, {"\"classifier_bias\"", "head.dense.bias"}},
      {"modernbert-embed", [](json& j) { j["mlp_bias"] = true; }, {"\"mlp_bias\"", "mlp.Wi.bias"}},
      {"modernbert-embed", [](json& j) { j["num_hidden_layers"] = 2; j.erase("layer_types"); },
       {"\"num_hidden_layers\" = 2", "layers.2.", "holds more layers"}},
      {"modernbert-embed", [](json& j) { j["num_hidden_layers"] = 4; j.erase("layer_types"); },
       {"\"num_hidden_layers\" = 4", "layers.3.", "fewer layers"}},
      {"modernbert-embed", [](json& j) { j["intermediate_size"] = 64; }, {"\"intermediate_size", "128"}},
      {"modernbert-embed", [](json& j) { j["vocab_size"] = 900; }, {"\"vocab_size\"", "900"}},
      {"modernbert-embed", [](json& j) { j["global_attn_every_n_layers"] = 2; }, {"\"layer_types\"", "disagree"}},
      {"modernbert-embed", [](json& j) { j["rope_parameters"]["sliding_attention"]["rope_type"] = "yarn"; },
       {"rope_parameters", "yarn"}},
      {"modernbert-ce", [](json& j) { j["classifier_pooling"] = "max"; }, {"\"classifier_pooling\"", "max"}},
  };
  ScratchDir tmp;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i) + " on " + cases[i].fixture);
    const auto dir = copy_fixture(cases[i].fixture, tmp);
    edit_json_file(dir / "config.json", cases[i].edit);
    const RunResult r = run_cli_bounded({"info", "-m", dir.string()}, tmp);
    EXPECT_EQ(r.status, 1) << r.err;
    expect_contains(r.err, {(dir / "config.json").string()});
    expect_contains(r.err, cases[i].parts);
  }
}

}  // namespace
}  // namespace il::cli_test
