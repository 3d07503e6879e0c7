// `inferencelayer tokenize` against the encodings transformers recorded in the fixtures.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace il::cli_test {
namespace {

using nlohmann::json;

class TokenizeTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    expected_ = load_expected(GetParam());
    dir_ = fixture_path(GetParam());
    ASSERT_TRUE(expected_.contains("cases"));
  }
  RunResult tokenize(const std::vector<std::string>& extra, const std::string& model = "") {
    std::vector<std::string> args = {"tokenize", "--model", model.empty() ? dir_ : model};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(cli_args(args));
  }
  std::vector<json> outputs(const RunResult& r) {
    std::vector<json> v;
    for (const auto& l : r.lines()) v.push_back(parse_line(l));
    return v;
  }

  json expected_;
  std::string dir_;
  ScratchDir tmp_;
};

TEST_P(TokenizeTest, IdsTypeIdsAndOffsetsMatchTransformers) {
  std::vector<std::string> lines;
  for (const auto& c : expected_["cases"]) {
    json in = {{"text", c["text"]}};
    if (c.contains("pair") && !c["pair"].is_null()) in["pair"] = c["pair"];
    lines.push_back(in.dump());
  }
  const std::string max_len = std::to_string(expected_.value("max_length", 0));
  const auto r = tokenize({"--max-length", max_len, "-i", tmp_.write("in.jsonl", lines)});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto got = outputs(r);
  ASSERT_EQ(got.size(), lines.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const json& c = expected_["cases"][i];
    EXPECT_EQ(got[i]["ids"], c["input_ids"]) << "case " << i << ": " << lines[i];
    EXPECT_EQ(got[i]["type_ids"], c["token_type_ids"]) << "case " << i;
    if (c.contains("offsets")) {
      EXPECT_EQ(got[i]["offsets"], c["offsets"]) << "case " << i << ": " << lines[i];
    }
  }
}

TEST_P(TokenizeTest, TokenizerJsonAloneIsEnough) {
  // A folder with nothing but tokenizer.json, and the file itself, both work.
  std::filesystem::copy_file(fixture_dir(GetParam()) / "tokenizer.json", tmp_.path() / "tokenizer.json");
  const auto a = tokenize({"hello world"});
  const auto b = tokenize({"hello world"}, tmp_.path().string());
  const auto c = tokenize({"hello world"}, tmp_.file("tokenizer.json"));
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.out, c.out);
}

TEST_P(TokenizeTest, OptionsAndPerLineOverrides) {
  const std::string text = "The quick brown fox jumps over the lazy dog again and again";
  const auto full = outputs(tokenize({"--tokens", text}));
  ASSERT_EQ(full.size(), 1u);
  const auto ids = full[0]["ids"].get<std::vector<int>>();
  ASSERT_GE(ids.size(), 6u);
  EXPECT_EQ(full[0]["tokens"].size(), ids.size());

  const auto bare = outputs(tokenize({"--no-special-tokens", text}));
  ASSERT_EQ(bare.size(), 1u);
  const auto bare_ids = bare[0]["ids"].get<std::vector<int>>();
  EXPECT_EQ(bare_ids.size() + 2, ids.size());
  EXPECT_EQ(std::vector<int>(ids.begin() + 1, ids.end() - 1), bare_ids);

  // The same through a JSONL field instead of the option.
  const std::string in = tmp_.write("in.jsonl", {json{{"text", text}, {"add_special_tokens", false}}.dump()});
  const auto per_line = outputs(tokenize({"-i", in}));
  ASSERT_EQ(per_line.size(), 1u);
  EXPECT_EQ(per_line[0]["ids"], bare[0]["ids"]);

  // Truncation to 5: the special tokens stay, the text is cut on the chosen side.
  const auto right = outputs(tokenize({"--max-length", "5", text}));
  const auto left = outputs(tokenize({"--max-length", "5", "--truncation-direction", "left", text}));
  ASSERT_EQ(right.size(), 1u);
  ASSERT_EQ(left.size(), 1u);
  const auto r = right[0]["ids"].get<std::vector<int>>(), l = left[0]["ids"].get<std::vector<int>>();
  ASSERT_EQ(r.size(), 5u);
  ASSERT_EQ(l.size(), 5u);
  EXPECT_EQ(std::vector<int>(r.begin(), r.begin() + 4), std::vector<int>(ids.begin(), ids.begin() + 4));
  EXPECT_EQ(std::vector<int>(l.end() - 4, l.end()), std::vector<int>(ids.end() - 4, ids.end()));

  // --pair applies to every input; only_second leaves the first text whole.
  const auto pair = outputs(tokenize({"--pair", text, "--max-length", "12", "--truncation-strategy", "only_second", "a b"}));
  ASSERT_EQ(pair.size(), 1u);
  EXPECT_EQ(pair[0]["ids"].size(), 12u);
  EXPECT_EQ(pair[0]["offsets"].size(), 12u);
}

// Code point offsets: every byte range maps to the characters it covers, in the token's own
// text (the pair's for second-sequence tokens); special tokens stay [0, 0].
TEST_P(TokenizeTest, OffsetsInCharacters) {
  const std::string text = "naïve café — 東京 ok", pair = "ünïcode ✓ pair";
  const std::string in = tmp_.write("chars.jsonl", {json{{"text", text}, {"pair", pair}}.dump()});
  const auto bytes = outputs(tokenize({"-i", in}));
  const auto chars = outputs(tokenize({"-i", in, "--offsets", "chars"}));
  ASSERT_EQ(bytes.size(), 1u);
  ASSERT_EQ(chars.size(), 1u);
  ASSERT_EQ(bytes[0]["offsets"].size(), chars[0]["offsets"].size());
  auto to_chars = [](const std::string& s, std::size_t byte) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < byte; ++i) n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
    return n;
  };
  // The pair's tokens follow the first special token that comes after a text token (type ids
  // cannot tell: RoBERTa-style models give the pair type 0 too).
  bool saw_multibyte = false, saw_text = false, in_pair = false;
  for (std::size_t i = 0; i < bytes[0]["offsets"].size(); ++i) {
    const std::size_t b0 = bytes[0]["offsets"][i][0], b1 = bytes[0]["offsets"][i][1];
    if (b1 == 0) {
      in_pair = in_pair || saw_text;
      continue;
    }
    saw_text = true;
    const std::string& src = in_pair ? pair : text;
    EXPECT_EQ(chars[0]["offsets"][i][0].get<std::size_t>(), to_chars(src, b0)) << i;
    EXPECT_EQ(chars[0]["offsets"][i][1].get<std::size_t>(), to_chars(src, b1)) << i;
    saw_multibyte = saw_multibyte || (b1 - b0) > (to_chars(src, b1) - to_chars(src, b0));
  }
  EXPECT_TRUE(saw_multibyte) << "the case must contain multi-byte characters inside tokens";
  EXPECT_TRUE(in_pair) << "the case must reach the pair's tokens";
  EXPECT_NE(tokenize({"--offsets", "words", "x"}).status, 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenizeTest, ::testing::Values("bert-mean", "bert-cls", "bert-ce", "xlmr-ce", "jina-ce"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace il::cli_test
