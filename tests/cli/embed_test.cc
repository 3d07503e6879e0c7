// `inferencelayer embed` against the transformers references in the embedding fixtures.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace il::cli_test {
namespace {

using nlohmann::json;

std::vector<std::vector<float>> embeddings(const RunResult& r, const char* key = "embedding") {
  std::vector<std::vector<float>> v;
  for (const auto& line : r.lines()) {
    const json j = parse_line(line);
    if (!j.is_object() || !j.contains(key)) {
      ADD_FAILURE() << "line without \"" << key << "\": " << line.substr(0, 200);
      continue;
    }
    v.push_back(j.at(key).get<std::vector<float>>());
  }
  return v;
}

std::vector<float> normalized(std::vector<float> v) {
  double sq = 0;
  for (float x : v) sq += static_cast<double>(x) * x;
  for (float& x : v) x = static_cast<float>(x / std::sqrt(sq));
  return v;
}

class EmbedTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    expected_ = load_expected(GetParam());
    dir_ = fixture_path(GetParam());
    ASSERT_TRUE(expected_.contains("cases"));
    // An empty text is refused by embed (as TEI and the OpenAI API do); errors_test covers it.
    for (const auto& c : expected_["cases"])
      if (!c.contains("prompt_name") && !c["text"].get<std::string>().empty()) plain_.push_back(c);
  }
  RunResult embed(const std::vector<std::string>& extra, const std::string& input_file = "") {
    std::vector<std::string> args = {"embed", "--model", dir_};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(cli_args(args), input_file);
  }

  json expected_;
  std::string dir_;
  std::vector<json> plain_;  // non-empty text cases without a prompt
  ScratchDir tmp_;
};

TEST_P(EmbedTest, JsonlTextsMatchTransformers) {
  std::vector<std::string> lines;
  for (const auto& c : plain_) lines.push_back(json{{"text", c["text"]}}.dump());
  const auto r = embed({"--input", tmp_.write("in.jsonl", lines)});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto got = embeddings(r);
  ASSERT_EQ(got.size(), plain_.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(max_abs_diff(got[i], plain_[i]["pooled"].get<std::vector<float>>()), kTolerance)
        << "case " << i << ": " << plain_[i]["text"];
}

TEST_P(EmbedTest, PositionalTextsMatchTransformers) {
  std::vector<std::string> args;
  std::vector<std::vector<float>> want;
  for (const auto& c : plain_) {
    const std::string t = c["text"];
    if (t.find('\n') != std::string::npos || t.empty() || t[0] == '-') continue;
    args.push_back(t);
    want.push_back(c["pooled"].get<std::vector<float>>());
  }
  ASSERT_FALSE(args.empty());
  const auto r = embed(args);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto got = embeddings(r);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_LE(max_abs_diff(got[i], want[i]), kTolerance) << args[i];
}

TEST_P(EmbedTest, PromptNameMatchesTransformers) {
  std::size_t checked = 0;
  for (const auto& c : expected_["cases"]) {
    if (!c.contains("prompt_name")) continue;
    const auto r = embed({"--prompt-name", c["prompt_name"].get<std::string>(), c["input_text"].get<std::string>()});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto got = embeddings(r);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_LE(max_abs_diff(got[0], c["pooled"].get<std::vector<float>>()), kTolerance) << c["input_text"];
    // The same text with the prompt written out by hand gives the same vector.
    const auto r2 = embed({"--prompt", "", c["text"].get<std::string>()});
    ASSERT_EQ(r2.status, 0) << r2.err;
    EXPECT_EQ(embeddings(r2), got);
    ++checked;
  }
  EXPECT_GT(checked, 0u) << "the fixture has no prompt case";
}

TEST_P(EmbedTest, TokenIdsGiveTheSameVectorsAsText) {
  std::vector<std::string> text_lines, id_lines;
  for (const auto& c : plain_) {
    text_lines.push_back(json{{"text", c["text"]}}.dump());
    id_lines.push_back(json{{"input_ids", c["input_ids"]}, {"token_type_ids", c["token_type_ids"]}}.dump());
  }
  const auto from_text = embed({"-i", tmp_.write("text.jsonl", text_lines)});
  const auto from_ids = embed({"-i", tmp_.write("ids.jsonl", id_lines)});
  ASSERT_EQ(from_text.status, 0) << from_text.err;
  ASSERT_EQ(from_ids.status, 0) << from_ids.err;
  const auto a = embeddings(from_text), b = embeddings(from_ids);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_LE(max_abs_diff(a[i], b[i]), 1e-6) << "case " << i;
}

TEST_P(EmbedTest, IdCasesMatchTransformers) {
  ASSERT_TRUE(expected_.contains("id_cases"));
  std::vector<std::string> lines;
  for (const auto& c : expected_["id_cases"])
    lines.push_back(json{{"input_ids", c["input_ids"]}, {"token_type_ids", c["token_type_ids"]}}.dump());
  const auto r = embed({"-i", tmp_.write("ids.jsonl", lines)});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto got = embeddings(r);
  ASSERT_EQ(got.size(), lines.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(max_abs_diff(got[i], expected_["id_cases"][i]["pooled"].get<std::vector<float>>()), kTolerance)
        << "id case " << i;
}

TEST_P(EmbedTest, HiddenOutputHasOneRowPerToken) {
  std::vector<std::string> lines;
  std::vector<json> cases;
  for (const auto& c : expected_["id_cases"]) {
    lines.push_back(json{{"input_ids", c["input_ids"]}, {"token_type_ids", c["token_type_ids"]}}.dump());
    cases.push_back(c);
  }
  const auto r = embed({"--output-kind", "hidden", "-i", tmp_.write("ids.jsonl", lines)});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto out = r.lines();
  ASSERT_EQ(out.size(), cases.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const json j = parse_line(out[i]);
    ASSERT_TRUE(j.contains("hidden"));
    const auto got = j["hidden"].get<std::vector<std::vector<float>>>();
    ASSERT_EQ(got.size(), cases[i]["input_ids"].size()) << "id case " << i;
    if (!cases[i].contains("hidden")) continue;
    const auto want = cases[i]["hidden"].get<std::vector<std::vector<float>>>();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t t = 0; t < got.size(); ++t)
      EXPECT_LE(max_abs_diff(got[t], want[t]), kTolerance) << "id case " << i << " token " << t;
  }
}

// Pooling and normalisation options, checked against the hidden states of the same text.
TEST_P(EmbedTest, PoolingNormalizeAndDimensionsFollowTheHiddenStates) {
  const std::string text = plain_.at(0)["text"];
  const auto h = embed({"--output-kind", "hidden", text});
  ASSERT_EQ(h.status, 0) << h.err;
  const auto hidden = parse_line(h.lines().at(0))["hidden"].get<std::vector<std::vector<float>>>();
  ASSERT_FALSE(hidden.empty());
  std::vector<float> mean(hidden[0].size(), 0.0f);
  for (const auto& row : hidden)
    for (std::size_t k = 0; k < row.size(); ++k) mean[k] += row[k] / static_cast<float>(hidden.size());

  const auto cls = embeddings(embed({"--pooling", "cls", "--no-normalize", text}));
  ASSERT_EQ(cls.size(), 1u);
  EXPECT_LE(max_abs_diff(cls[0], hidden[0]), 1e-5);
  const auto last = embeddings(embed({"--pooling", "last", "--normalize", text}));
  ASSERT_EQ(last.size(), 1u);
  EXPECT_LE(max_abs_diff(last[0], normalized(hidden.back())), 1e-5);
  const auto m = embeddings(embed({"--pooling", "mean", "--no-normalize", text}));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_LE(max_abs_diff(m[0], mean), 1e-4);

  // Matryoshka: the first N dimensions of the unnormalised vector, re-normalised.
  const auto full = embeddings(embed({"--no-normalize", text}));
  const auto cut = embeddings(embed({"--dimensions", "8", text}));
  ASSERT_EQ(cut.size(), 1u);
  ASSERT_EQ(cut[0].size(), 8u);
  EXPECT_LE(max_abs_diff(cut[0], normalized({full[0].begin(), full[0].begin() + 8})), 1e-6);
}

TEST_P(EmbedTest, RandomWeightsNoticeGoesToStderr) {
  const auto r = embed({"hello"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("holds random weights"), std::string::npos) << r.err;
  EXPECT_EQ(r.lines().size(), 1u);
}

TEST_P(EmbedTest, OutputFileAndTxtInput) {
  std::vector<std::string> texts;
  for (const auto& c : plain_) {
    const std::string t = c["text"];
    if (!t.empty() && t.find('\n') == std::string::npos && t.find('\r') == std::string::npos) texts.push_back(t);
  }
  const std::string out = tmp_.file("out.jsonl");
  const auto r = embed({"-i", tmp_.write("in.txt", texts), "-o", out});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  std::ifstream f(out);
  std::string line;
  std::size_t n = 0;
  while (std::getline(f, line)) {
    EXPECT_TRUE(parse_line(line).contains("embedding"));
    ++n;
  }
  EXPECT_EQ(n, texts.size());
}

// 2,000 lines through a pipe, in many small chunks: every line comes out, in order, and equals
// the one-at-a-time result.
TEST_P(EmbedTest, PipedTwoThousandLinesStream) {
  std::vector<std::string> distinct;
  for (const auto& c : plain_) {
    const std::string t = c["text"];
    if (!t.empty() && t.find('\n') == std::string::npos && t.find('\r') == std::string::npos &&
        t.find_first_not_of(" \t") != std::string::npos && t[t.find_first_not_of(" \t")] != '{')
      distinct.push_back(t);
  }
  ASSERT_GE(distinct.size(), 2u);
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < 2000; ++i) lines.push_back(distinct[i % distinct.size()]);
  const std::string in = tmp_.write("many.txt", lines);
  const auto r = run_cli(cli_args({"embed", "--model", dir_, "--max-batch-tokens", "300"}), "",
                         "cat " + quote(in) + " |");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto got = embeddings(r);
  ASSERT_EQ(got.size(), 2000u);
  const auto one = embeddings(embed(distinct));
  ASSERT_EQ(one.size(), distinct.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, max_abs_diff(got[i], one[i % one.size()]));
  EXPECT_LE(worst, 1e-5);
}

// A folder pooled without its prompt (include_prompt: false): --prompt-name and --prompt give
// sentence-transformers' vectors, one text at a time and batched from a file; the prompt typed
// into the text is text, not a prompt, and pools differently.
TEST(EmbedPromptPooling, PromptsAreLeftOutOfPooling) {
  const json expected = load_expected("bert-mean-noprompt");
  const std::string dir = fixture_path("bert-mean-noprompt");
  std::ifstream cst(dir + "/config_sentence_transformers.json");
  const json prompts = json::parse(cst)["prompts"];
  ScratchDir tmp;
  std::map<std::string, std::vector<json>> by_prompt;
  for (const auto& c : expected["cases"])
    if (c.contains("prompt_name")) by_prompt[c["prompt_name"].get<std::string>()].push_back(c);
  ASSERT_FALSE(by_prompt.empty());
  for (const auto& [name, cases] : by_prompt) {
    std::vector<std::string> lines;
    for (const auto& c : cases) lines.push_back(json{{"text", c["input_text"]}}.dump());
    const std::string file = tmp.write(name + ".jsonl", lines);
    for (const std::vector<std::string>& how :
         {std::vector<std::string>{"--prompt-name", name}, {"--prompt", prompts[name].get<std::string>()}}) {
      std::vector<std::string> args = {"embed", "--model", dir, "--input", file};
      args.insert(args.end(), how.begin(), how.end());
      const auto r = run_cli(cli_args(args));
      ASSERT_EQ(r.status, 0) << r.err;
      const auto got = embeddings(r);
      ASSERT_EQ(got.size(), cases.size());
      for (std::size_t i = 0; i < got.size(); ++i)
        EXPECT_LE(max_abs_diff(got[i], cases[i]["pooled"].get<std::vector<float>>()), kTolerance)
            << how[0] << " " << name << ": " << cases[i]["input_text"];
    }
    const json& c = cases.front();
    if (c["prompt_length"].get<int>() == 0) continue;
    const auto typed = run_cli(cli_args({"embed", "--model", dir, c["text"].get<std::string>()}));
    ASSERT_EQ(typed.status, 0) << typed.err;
    EXPECT_GT(max_abs_diff(embeddings(typed).at(0), c["pooled"].get<std::vector<float>>()), 1e-3) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EmbedTest, ::testing::Values("bert-mean", "bert-cls", "nomic-embed", "nomic-embed-rot"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace il::cli_test
