// LFM2 through the command line: `embed --output-kind hidden` against transformers' last hidden
// states (tests/fixtures/lfm2-hidden, tools/oracle/make_lfm2_fixtures.py), mean-pooled
// embeddings from text, `info`, the folder checks (a ColBERT / sentence-transformers folder, layer
// kinds that disagree with the checkpoint, a conv bias), and `bench` on LFM2-ColBERT-350M's config
// with random weights.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace il::cli_test {
namespace {

using nlohmann::json;

constexpr double kHiddenTolerance = 3e-4;  // as for Qwen3's hidden states on the CPU

TEST(Lfm2Cli, HiddenStatesMatchTransformers) {
  const json expected = load_expected("lfm2-hidden");
  std::vector<std::string> lines;
  std::vector<json> cases;
  for (const char* list : {"cases", "id_cases"})
    for (const auto& c : expected[list]) {
      if (!c.contains("hidden") || c["hidden"].is_null()) continue;
      lines.push_back(json{{"input_ids", c["input_ids"]}}.dump());
      cases.push_back(c);
    }
  ASSERT_GE(cases.size(), 4u);
  ScratchDir tmp;
  const auto r = run_cli(cli_args({"embed", "--model", fixture_path("lfm2-hidden"), "--input",
                                   tmp.write("ids.jsonl", lines), "--output-kind", "hidden", "--device", "cpu"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto out = r.lines();
  ASSERT_EQ(out.size(), cases.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto got = parse_line(out[i])["hidden"].get<std::vector<std::vector<float>>>();
    const auto want = cases[i]["hidden"].get<std::vector<std::vector<float>>>();
    ASSERT_EQ(got.size(), want.size()) << "case " << i;
    for (std::size_t t = 0; t < got.size(); ++t)
      EXPECT_LE(max_abs_diff(got[t], want[t]), kHiddenTolerance) << "case " << i << " token " << t;
  }
}

TEST(Lfm2Cli, MeanPooledEmbeddingsFromTextMatchSentenceTransformers) {
  const json expected = load_expected("lfm2-hidden");
  std::vector<std::string> lines;
  std::vector<json> cases;
  for (const auto& c : expected["cases"]) {
    if (c["text"].get<std::string>().empty()) continue;  // the CLI refuses empty text
    lines.push_back(json{{"text", c["text"]}}.dump());
    cases.push_back(c);
  }
  ScratchDir tmp;
  const auto r = run_cli(cli_args({"embed", "--model", fixture_path("lfm2-hidden"), "--input",
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

TEST(Lfm2Cli, InfoDescribesTheHybrid) {
  const auto r = run_cli(cli_args({"info", "--model", fixture_path("lfm2-hidden"), "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = parse_line(r.out);
  EXPECT_EQ(j["model_type"], "lfm2");
  EXPECT_EQ(j["layout"], "lfm2");
  EXPECT_EQ(j["capabilities"], json({"embed", "hidden_states"}));
}

// Each edit of a copy of the fixture is refused at load, naming what to fix.
TEST(Lfm2Cli, FoldersTheEngineCannotServeAreRefusedNamingTheCause) {
  ScratchDir tmp;
  const std::string input = tmp.write("ids.jsonl", {R"({"input_ids":[1,2,3]})"});
  const auto refused = [&](const std::filesystem::path& dir, const std::vector<std::string>& parts) {
    const auto r = run_cli(cli_args({"embed", "--model", dir.string(), "--input", input, "--output-kind", "hidden",
                                     "--device", "cpu"}));
    EXPECT_NE(r.status, 0) << dir;
    expect_contains(r.err, parts);
  };
  {  // sentence-transformers modules other than PyLate's Transformer + Dense (here a Transformer
     // alone): not a layout LFM2 ships
    const auto dir = copy_fixture("lfm2-hidden", tmp);
    std::ofstream(dir / "modules.json")
        << R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"}])";
    refused(dir, {"modules.json", "PyLate (ColBERT) layout only"});
  }
  {  // layer kinds swapped against the checkpoint's tensors
    const auto dir = copy_fixture("lfm2-hidden", tmp);
    edit_json_file(dir / "config.json", [](json& c) {
      c["layer_types"] = {"full_attention", "conv", "full_attention", "conv"};
    });
    refused(dir, {"config.json", "layer 0", "conv.in_proj"});
  }
  {
    const auto dir = copy_fixture("lfm2-hidden", tmp);
    edit_json_file(dir / "config.json", [](json& c) { c["conv_bias"] = true; });
    refused(dir, {"config.json", "conv_bias"});
  }
  {  // an MLP width the checkpoint does not have
    const auto dir = copy_fixture("lfm2-hidden", tmp);
    edit_json_file(dir / "config.json", [](json& c) { c["block_ffn_dim_multiplier"] = nullptr; });
    refused(dir, {"config.json", "block_ff_dim / intermediate_size", "133", "192"});
  }
}

// bench/configs/lfm2-colbert-350m.json (LFM2-ColBERT-350M's trunk) builds with random weights and
// runs: 16 layers of which 6 attend, the MLP width from block_ff_dim's rule.
TEST(Lfm2Cli, BenchBuildsLfm2ColbertFromItsConfig) {
  const std::string config =
      (fixture_dir("lfm2-hidden").parent_path().parent_path().parent_path() / "bench" / "configs" /
       "lfm2-colbert-350m.json")
          .string();
  const auto r = run_cli(cli_args({"bench", "--config", config, "--grid", "1x8", "--warmup", "1", "--iters", "1",
                                   "--threads", "2"}));
  ASSERT_EQ(r.status, 0) << r.err;
  // The header names the layer count and width the config gave.
  expect_contains(r.out, {"lfm2-colbert-350m", "16 layers, hidden 1024"});
  const auto lines = r.lines();
  ASSERT_EQ(lines.size(), 3u) << r.out;  // the header's two lines, then the point
  expect_contains(lines[2], {" 1 ", " 8 "});
}

}  // namespace
}  // namespace il::cli_test
