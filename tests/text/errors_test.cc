// Loading errors name the file and the field.
#include <gtest/gtest.h>

#include "core/error.h"
#include "test_tokenizers.h"

namespace il::text {
namespace {

using testing::json;

std::string load_error(const json& j) {
  try {
    testing::load(j);
  } catch (const il::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TokenizerErrors, UnsupportedComponentTypes) {
  json j = testing::bert_like();
  j["model"]["type"] = "Foo";
  EXPECT_NE(load_error(j).find("tokenizer.json: model.type \"Foo\" is not supported (supported: "
                               "WordPiece, BPE"),
            std::string::npos)
      << load_error(j);

  j = testing::bert_like();
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers", json::array({{{"type", "NFC"}}, {{"type", "Bogus"}}})}};
  EXPECT_NE(load_error(j).find("tokenizer.json: normalizer.normalizers[1].type \"Bogus\" is not "
                               "supported"),
            std::string::npos)
      << load_error(j);

  j = testing::bert_like();
  j["decoder"]["type"] = "Nope";
  EXPECT_NE(load_error(j).find("decoder.type \"Nope\""), std::string::npos);
  j = testing::bert_like();
  j["pre_tokenizer"]["type"] = "Nope";
  EXPECT_NE(load_error(j).find("pre_tokenizer.type \"Nope\""), std::string::npos);
  j = testing::bert_like();
  j["post_processor"]["type"] = "Nope";
  EXPECT_NE(load_error(j).find("post_processor.type \"Nope\""), std::string::npos);
}

TEST(TokenizerErrors, TooManyPreTokenizerSteps) {
  // Each step is a level of recursion when a sequence is walked: a file with a huge Sequence is
  // refused at load, not left to exhaust the stack at the first encode.
  json j = testing::bert_like();
  json steps = json::array();
  for (int i = 0; i < 200; ++i) steps.push_back({{"type", "BertPreTokenizer"}});  // 2 steps each
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", steps}};
  EXPECT_EQ(load_error(j),
            "tokenizer.json: pre_tokenizer has 400 steps, more than the 256 supported");
  steps.erase(steps.begin() + 128, steps.end());
  j["pre_tokenizer"]["pretokenizers"] = steps;
  EXPECT_EQ(testing::load(j).encode("a b").ids.size(), 4u);  // [CLS] a b [SEP]
}

TEST(TokenizerErrors, MalformedFields) {
  json j = testing::bert_like();
  j.erase("model");
  EXPECT_EQ(load_error(j), "tokenizer.json: model is missing");

  j = testing::bert_like();
  j["model"]["vocab"]["hello"] = "five";
  EXPECT_EQ(load_error(j), "tokenizer.json: model.vocab[\"hello\"] must be an integer, not a string");

  j = testing::bert_like();
  j["model"]["vocab"]["hello"] = -3;
  EXPECT_NE(load_error(j).find("model.vocab[\"hello\"] is -3"), std::string::npos);

  j = testing::bert_like();
  j["normalizer"]["lowercase"] = "yes";
  EXPECT_EQ(load_error(j), "tokenizer.json: normalizer.lowercase must be a boolean, not a string");

  j = testing::bert_like();
  j["added_tokens"][1].erase("content");
  EXPECT_EQ(load_error(j), "tokenizer.json: added_tokens[1].content is missing");

  j = testing::bert_like();
  j["post_processor"]["single"][0]["SpecialToken"]["id"] = "<s>";
  EXPECT_NE(load_error(j).find("post_processor.single[0].SpecialToken.id uses the special token "
                               "\"<s>\""),
            std::string::npos)
      << load_error(j);

  j = testing::bert_like();
  j["version"] = "2.0";
  EXPECT_EQ(load_error(j), "tokenizer.json: version \"2.0\" is not supported (supported: 1.0)");
}

TEST(TokenizerErrors, InvalidJsonAndMissingFile) {
  try {
    Tokenizer::from_json_string("{\"model\": ", "my/tokenizer.json");
    FAIL();
  } catch (const il::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("my/tokenizer.json: not valid JSON", 0), 0u) << e.what();
  }
  try {
    Tokenizer::from_file("/nonexistent/dir/tokenizer.json");
    FAIL();
  } catch (const il::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/tokenizer.json"), std::string::npos);
  }
}

TEST(TokenizerErrors, TruncationAndPaddingSectionsAreReadPast) {
  json j = testing::bert_like();
  j["truncation"] = {{"direction", "Right"}, {"max_length", 512}, {"strategy", "LongestFirst"},
                     {"stride", 0}};
  j["padding"] = {{"strategy", {{"Fixed", 128}}}, {"pad_id", 0}, {"pad_token", "[PAD]"}};
  const Tokenizer t = testing::load(j);
  EXPECT_EQ(t.encode("a b a b a b a b a b").ids.size(), 12u);  // no limit applied
}

TEST(TokenizerErrors, MissingUnknownTokenFailsTheEncodeThatNeedsIt) {
  json j = testing::bert_like();
  j["model"]["unk_token"] = "<unk>";
  const Tokenizer t = testing::load(j);
  EXPECT_EQ(t.encode("hello", {.add_special_tokens = false}).ids.size(), 1u);
  EXPECT_THROW(t.encode("zzz"), il::Error);
}

}  // namespace
}  // namespace il::text
