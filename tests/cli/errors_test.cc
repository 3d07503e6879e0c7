// Bad command lines and bad input lines: one "inferencelayer: error: ..." line naming the
// problem (and the input line), exit status 2, never a crash.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_test_util.h"

namespace il::cli_test {
namespace {

using nlohmann::json;

void expect_usage_error(const RunResult& r, const std::string& needle) {
  EXPECT_EQ(r.status, 2) << "stderr: " << r.err;
  // Notes (the random-weights notice) may come first; the error is one line of its own.
  const std::size_t at = r.err.find("inferencelayer: error: ");
  EXPECT_TRUE(at != std::string::npos && (at == 0 || r.err[at - 1] == '\n')) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.err;
}

class ErrorsTest : public ::testing::Test {
 protected:
  RunResult embed_lines(const std::vector<std::string>& lines, const std::vector<std::string>& extra = {},
                        const std::string& name = "in.jsonl") {
    std::vector<std::string> args = {"embed", "-m", fixture_path("bert-mean"), "-i", tmp_.write(name, lines)};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(cli_args(args));
  }
  ScratchDir tmp_;
};

// --device: cpu runs here; an unknown name is refused with the accepted ones listed. (auto,
// the default, is every other test; cuda without a GPU is covered by the gpu tests.)
TEST_F(ErrorsTest, DeviceOption) {
  const auto cpu = embed_lines({R"({"text": "one"})"}, {"--device", "cpu"});
  EXPECT_EQ(cpu.status, 0) << cpu.err;
  EXPECT_EQ(cpu.lines().size(), 1u);
  const auto bad = embed_lines({R"({"text": "one"})"}, {"--device", "gpu0"});
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("not one of cpu, cuda, cuda:N, auto"), std::string::npos) << bad.err;
}

TEST_F(ErrorsTest, BadJsonNamesItsLineAndKeepsTheLinesBefore) {
  const auto r = embed_lines({R"({"text": "one"})", R"({"text": "two"})", R"({"text": "three")", R"({"text": "four"})"});
  expect_usage_error(r, "line 3");
  EXPECT_NE(r.err.find("not valid JSON"), std::string::npos) << r.err;
  EXPECT_EQ(r.lines().size(), 2u) << "the two good lines before the bad one are written";
}

TEST_F(ErrorsTest, BadJsonThroughStdinToo) {
  const std::string in = tmp_.write("in.jsonl", {R"({"text": "one"})", R"({"text": "two"})", "{not json"});
  const auto r = run_cli(cli_args({"embed", "-m", fixture_path("bert-mean")}), in);
  expect_usage_error(r, "line 3");
}

TEST_F(ErrorsTest, WrongTypesAndShapes) {
  expect_usage_error(embed_lines({R"({"text": 5})"}), "line 1");
  expect_usage_error(embed_lines({R"({"text": "ok"})", R"([1, 2])"}), "line 2");
  expect_usage_error(embed_lines({R"({"text": "ok"})", R"({"txt": "typo"})"}), "line 2");
  expect_usage_error(embed_lines({R"({"input_ids": [1, "x"]})"}), "line 1");
  expect_usage_error(embed_lines({R"({"input_ids": [2, 5, 3], "token_type_ids": [0]})"}), "line 1");
  expect_usage_error(embed_lines({R"({"input_ids": [2, 5, 3], "text": "both"})"}), "line 1");
}

TEST_F(ErrorsTest, IdsOutsideTheVocabulary) {
  const auto r = embed_lines({R"({"input_ids": [2, 5, 3]})", R"({"input_ids": [2, 99999999, 3]})"});
  expect_usage_error(r, "line 2");
  EXPECT_NE(r.err.find("99999999"), std::string::npos) << r.err;
  expect_usage_error(embed_lines({R"({"input_ids": []})"}), "line 1");
  expect_usage_error(embed_lines({R"({"input_ids": [2, 5], "token_type_ids": [0, 7]})"}), "line 1");
}

TEST_F(ErrorsTest, EmptyTextLine) {
  expect_usage_error(embed_lines({"first", "", "third"}, {}, "in.txt"), "line 2");
  expect_usage_error(embed_lines({R"({"text": ""})"}), "empty text");
}

TEST_F(ErrorsTest, TooLongWithNoTruncate) {
  std::string long_text;
  for (int i = 0; i < 300; ++i) long_text += "word ";
  const auto r = embed_lines({"short text", long_text}, {"--no-truncate"}, "in.txt");
  expect_usage_error(r, "line 2");
  // Without --no-truncate the same input is cut to the model's maximum and embedded.
  const auto ok = embed_lines({"short text", long_text}, {}, "in2.txt");
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.lines().size(), 2u);
}

TEST_F(ErrorsTest, MissingModelFolder) {
  const auto r = run_cli(cli_args({"embed", "-m", tmp_.file("no-such-model"), "hello"}));
  expect_usage_error(r, "no-such-model");
  expect_usage_error(run_cli(cli_args({"info", "-m", tmp_.file("nope")})), "nope");
  expect_usage_error(run_cli(cli_args({"tokenize", "-m", tmp_.file("nope"), "x"})), "nope");
  expect_usage_error(run_cli(cli_args({"rerank", "-m", tmp_.file("nope"), "-q", "q", "d"})), "nope");
}

TEST_F(ErrorsTest, MissingInputFile) {
  expect_usage_error(run_cli(cli_args({"embed", "-m", fixture_path("bert-mean"), "-i", tmp_.file("absent.txt")})),
                     "absent.txt");
}

TEST_F(ErrorsTest, BadOptionValues) {
  const std::string m = fixture_path("bert-mean");
  expect_usage_error(run_cli(cli_args({"embed", "-m", m, "--pooling", "max", "x"})), "pooling");
  expect_usage_error(run_cli(cli_args({"embed", "-m", m, "--dimensions", "100000", "x"})), "dimensions");
  expect_usage_error(run_cli(cli_args({"embed", "-m", m, "--prompt-name", "nosuch", "x"})), "nosuch");
  expect_usage_error(run_cli(cli_args({"embed", "-m", m, "--format", "csv", "x"})), "format");
  expect_usage_error(run_cli(cli_args({"embed", "-m", m, "--bogus"})), "bogus");
  expect_usage_error(run_cli(cli_args({"rerank", "-m", m, "-q", "q", "d"})), "not a cross-encoder");
  expect_usage_error(run_cli(cli_args({"bench", "--config", m + "/config.json", "--grid", "3y4"})), "3y4");
  expect_usage_error(run_cli(""), "");  // no subcommand
}

TEST_F(ErrorsTest, RerankAndTokenizeBadLines) {
  const std::string pairs = tmp_.write("pairs.jsonl", {R"({"query": "q", "document": "d"})", R"({"query": "q"})"});
  expect_usage_error(run_cli(cli_args({"rerank", "-m", fixture_path("bert-ce"), "-i", pairs})), "line 2");
  const std::string toks = tmp_.write("tok.jsonl", {R"({"text": "fine"})", R"({"text": "x", "pair": 3})"});
  const auto r = run_cli(cli_args({"tokenize", "-m", fixture_path("bert-ce"), "-i", toks}));
  expect_usage_error(r, "line 2");
  EXPECT_EQ(r.lines().size(), 1u);
}

TEST_F(ErrorsTest, InvalidUtf8IsAnInputError) {
  const auto r = embed_lines({"fine", "bad \xff\xfe bytes"}, {}, "in.txt");
  expect_usage_error(r, "line 2");
}

}  // namespace
}  // namespace il::cli_test

namespace il::cli_test {
namespace {

// The bench commands' lists are read before the model (a released-size config takes minutes to
// build): a bad entry is a usage error at once, naming the option and the entry.
TEST(BenchListErrors, BadEntriesAreRefusedBeforeLoading) {
  const auto config = [](const char* name) {
    return (fixture_dir("bert-mean") / "../../../bench/configs" / name).lexically_normal().string();
  };
  const std::string diffusion = config("diffusion-gemma-26b-a4b.json"), ocr = config("deepseek-ocr.json");
  ScratchDir dir;
  for (const auto& [args, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"bench-diffusion", "--config", diffusion, "--device", "cpu", "--steps", "2,x"}, "--steps: 'x'"},
           {{"bench-diffusion", "--config", diffusion, "--device", "cpu", "--batches", "1,,4"}, "--batches: ''"},
           {{"bench-diffusion", "--config", diffusion, "--device", "cpu", "--steps", "3abc"}, "--steps: '3abc'"},
           {{"bench-generate", "--config", ocr, "--device", "cpu", "--pages", "1,0"}, "--pages: '0'"}}) {
    const RunResult r = run_cli_bounded(args, dir);  // a regression would load for minutes: killed at 30 s
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("inferencelayer: error: " + needle), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace il::cli_test
