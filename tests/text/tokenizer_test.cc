// The tokenizer pipeline on small tokenizer.json documents.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "core/error.h"
#include "test_tokenizers.h"

namespace il::text {
namespace {

using testing::bert_like;
using testing::id_of;
using testing::json;
using testing::load;
using Offsets = std::vector<std::pair<uint32_t, uint32_t>>;

class BertLike : public ::testing::Test {
 protected:
  Tokenizer tok = load(bert_like());
  int32_t id(const std::string& s) const { return id_of(tok, s); }
};

TEST_F(BertLike, EncodesWordsPiecesAndPunctuation) {
  const Encoding e = tok.encode("Hello, worlds!");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{2, id("hello"), id(","), id("world"), id("##s"), id("!"),
                                         3}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 0}, {0, 5}, {5, 6}, {7, 12}, {12, 13}, {13, 14}, {0, 0}}));
  EXPECT_EQ(e.type_ids, (std::vector<int32_t>(7, 0)));
  EXPECT_EQ(e.special_tokens_mask, (std::vector<uint8_t>{1, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(e.sequence_ids, (std::vector<int8_t>{-1, 0, 0, 0, 0, 0, -1}));
}

TEST_F(BertLike, GreedyLongestMatchWordPiece) {
  const Encoding e = tok.encode("unaffable", {.add_special_tokens = false});
  EXPECT_EQ(e.ids, (std::vector<int32_t>{id("un"), id("##aff"), id("##able")}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 2}, {2, 5}, {5, 9}}));
}

TEST_F(BertLike, UnknownWordIsOneUnkToken) {
  const Encoding e = tok.encode("hello zzz", {.add_special_tokens = false});
  EXPECT_EQ(e.ids, (std::vector<int32_t>{id("hello"), 1}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 5}, {6, 9}}));
}

TEST(WordPiece, WordsLongerThanTheLimitAreUnknown) {
  json j = bert_like();
  j["model"] = testing::wordpiece_model({"x", "##x"}, 4);
  const Tokenizer t = load(j);
  EXPECT_EQ(t.encode("xxxx", {.add_special_tokens = false}).ids.size(), 4u);
  const Encoding e = t.encode("xxxxx", {.add_special_tokens = false});
  EXPECT_EQ(e.ids, (std::vector<int32_t>{1}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 5}}));
}

TEST_F(BertLike, OffsetsPointIntoTheOriginalThroughNormalisation) {
  // "CAFÉS": lowercased, the accent stripped: "cafe" + "##s"; É spans bytes 5..7.
  const Encoding e = tok.encode("  CAF\xC3\x89S ", {.add_special_tokens = false});
  EXPECT_EQ(e.ids, (std::vector<int32_t>{id("cafe"), id("##s")}));
  EXPECT_EQ(e.offsets, (Offsets{{2, 7}, {7, 8}}));
  // A piece made of a stripped accented letter covers all of it: "xÉ" -> "x" + "##e".
  const Encoding g = tok.encode("X\xC3\x89", {.add_special_tokens = false});
  EXPECT_EQ(g.ids, (std::vector<int32_t>{id("x"), id("##e")}));
  EXPECT_EQ(g.offsets, (Offsets{{0, 1}, {1, 3}}));
  // Controls vanish, a tab is a space; a combining mark after a letter is stripped.
  const Encoding f = tok.encode("a\x01\tb e\xCC\x81", {.add_special_tokens = false});
  EXPECT_EQ(f.ids, (std::vector<int32_t>{id("a"), id("b"), id("e")}));
  EXPECT_EQ(f.offsets, (Offsets{{0, 1}, {3, 4}, {5, 6}}));
}

TEST_F(BertLike, ChineseCharactersAreSeparateWords) {
  const Encoding e = tok.encode("a\xE4\xB8\xAD\xE5\x9B\xBD" "b", {.add_special_tokens = false});
  EXPECT_EQ(e.ids, (std::vector<int32_t>{id("a"), id("中"), 1, id("b")}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {1, 4}, {4, 7}, {7, 8}}));
}

TEST_F(BertLike, SpecialTokensTypedInTheTextAreMatchedFirst) {
  const Encoding e = tok.encode("a[MASK]b [mask]", {.add_special_tokens = false});
  // "[MASK]" is a special, non-normalised added token; "[mask]" is not it.
  EXPECT_EQ(e.ids, (std::vector<int32_t>{id("a"), 4, id("b"), 1, 1, 1}));
  EXPECT_EQ(e.offsets[1], (std::pair<uint32_t, uint32_t>{1, 7}));
  EXPECT_EQ(e.special_tokens_mask, (std::vector<uint8_t>(6, 0)));
}

TEST(AddedTokens, StripSingleWordAndNormalized) {
  json j = bert_like();
  j["added_tokens"].push_back(testing::added_token(35, "<ent>", true, false, true, true));
  j["added_tokens"].push_back(testing::added_token(36, "New York", false, true, false, false, true));
  const Tokenizer t = load(j);
  EXPECT_EQ(t.token_to_id("<ent>"), 35);
  EXPECT_EQ(t.token_to_id("New York"), 36);
  // lstrip / rstrip: the spaces around become part of the token.
  Encoding e = t.encode("a  <ent>  b", {.add_special_tokens = false});
  EXPECT_EQ(e.ids, (std::vector<int32_t>{id_of(t, "a"), 35, id_of(t, "b")}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {1, 10}, {10, 11}}));
  // A normalised token matches the normalised text; single_word refuses a match inside a word.
  e = t.encode("NEW YORK xnew york", {.add_special_tokens = false});
  EXPECT_EQ(e.ids[0], 36);
  EXPECT_EQ(e.offsets[0], (std::pair<uint32_t, uint32_t>{0, 8}));
  EXPECT_EQ(e.ids, (std::vector<int32_t>{36, 1, id_of(t, "york")}));  // "xnew" is unknown
  // Decoding writes a normalised added token in its normalised form, as the library does;
  // [UNK] is special, so it can be skipped.
  EXPECT_EQ(t.decode(e.ids, true), "new york york");
  EXPECT_EQ(t.decode(e.ids, false), "new york [UNK] york");
  EXPECT_EQ(t.id_to_token(36), "new york");
}

TEST(AddedTokens, StrippingTokensMadeOfSpaces) {
  // A token that is itself whitespace, stripping on both sides: the first match takes the whole
  // run of whitespace around it, the later tabs included, and the matches inside what it took
  // add nothing. (The scans behind this stop where earlier ones did, so a long run costs its
  // length, not its length times the matches in it.)
  json j = bert_like();
  j["added_tokens"].push_back(testing::added_token(35, "\t", false, false, true, true));
  const Tokenizer t = load(j);
  Encoding e = t.encode("a \t \t  b \ta", {.add_special_tokens = false});
  EXPECT_EQ(e.ids, (std::vector<int32_t>{id_of(t, "a"), 35, id_of(t, "b"), 35, id_of(t, "a")}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {1, 7}, {7, 8}, {8, 10}, {10, 11}}));
  std::string spaces(3000, ' ');
  for (int i = 0; i < 3000; ++i) spaces[static_cast<std::size_t>(i) * 7 % 3000] = '\t';
  e = t.encode("b" + spaces + "a", {.add_special_tokens = false});
  EXPECT_EQ(e.ids, (std::vector<int32_t>{id_of(t, "b"), 35, id_of(t, "a")}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {1, 3001}, {3001, 3002}}));
}

TEST(AddedTokens, IdsFollowTheLibraryNotTheFile) {
  json j = bert_like();
  // Not in the vocabulary: gets the first id after it, whatever the file says.
  j["added_tokens"].push_back(testing::added_token(5, "zzzq", false, false));
  // In the vocabulary: keeps the model's id.
  j["added_tokens"].push_back(testing::added_token(999, "hello", false, false));
  const Tokenizer t = load(j);
  const auto vocab = static_cast<int32_t>(testing::small_words().size() + 5);
  EXPECT_EQ(t.token_to_id("zzzq"), vocab);
  EXPECT_EQ(t.token_to_id("hello"), 5);
  EXPECT_EQ(t.vocab_size(), static_cast<std::size_t>(vocab) + 1);
  EXPECT_EQ(t.id_to_token(vocab), "zzzq");
}

TEST_F(BertLike, PairsGetTypeIdsAndOwnOffsets) {
  const Encoding e = tok.encode_pair("hello world", "the world");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{2, id("hello"), id("world"), 3, id("the"), id("world"),
                                         3}));
  EXPECT_EQ(e.type_ids, (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 0}, {0, 5}, {6, 11}, {0, 0}, {0, 3}, {4, 9}, {0, 0}}));
  EXPECT_EQ(e.sequence_ids, (std::vector<int8_t>{-1, 0, 0, -1, 1, 1, -1}));
  // Without special tokens the template still sets the type ids.
  const Encoding f = tok.encode_pair("hello", "world", {.add_special_tokens = false});
  EXPECT_EQ(f.type_ids, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(tok.num_special_tokens_to_add(false), 2u);
  EXPECT_EQ(tok.num_special_tokens_to_add(true), 3u);
}

TEST(PostProcessors, BertRobertaAndNone) {
  json j = bert_like();
  j["post_processor"] = {{"type", "BertProcessing"}, {"sep", {"[SEP]", 3}}, {"cls", {"[CLS]", 2}}};
  Tokenizer t = load(j);
  Encoding e = t.encode_pair("a", "b");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{2, id_of(t, "a"), 3, id_of(t, "b"), 3}));
  EXPECT_EQ(e.type_ids, (std::vector<int32_t>{0, 0, 0, 1, 1}));

  j["post_processor"] = {{"type", "RobertaProcessing"}, {"sep", {"[SEP]", 3}},
                         {"cls", {"[CLS]", 2}}, {"trim_offsets", true}, {"add_prefix_space", false}};
  t = load(j);
  e = t.encode_pair("a", "b");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{2, id_of(t, "a"), 3, 3, id_of(t, "b"), 3}));
  EXPECT_EQ(e.type_ids, (std::vector<int32_t>(6, 0)));
  EXPECT_EQ(t.num_special_tokens_to_add(true), 4u);

  j["post_processor"] = nullptr;
  t = load(j);
  e = t.encode_pair("a", "b");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{id_of(t, "a"), id_of(t, "b")}));
  EXPECT_EQ(e.type_ids, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(e.sequence_ids, (std::vector<int8_t>{0, 1}));
}

TEST_F(BertLike, DecodeJoinsPiecesAndCleansUp) {
  // The clean-up works token by token, as in the library: " ," and " !" lose their space, but
  // "don ' t" stays apart because no single token holds " ' ".
  const Encoding e = tok.encode("I don't, hello worlds!");
  EXPECT_EQ(tok.decode(e.ids, true), "i don ' t, hello worlds!");
  EXPECT_EQ(tok.decode(e.ids, false), "[CLS] i don ' t, hello worlds! [SEP]");
  const std::vector<int32_t> unknown_ids = {id("hello"), 12345, id("world")};
  EXPECT_EQ(tok.decode(unknown_ids, true), "hello world");
}

TEST_F(BertLike, Queries) {
  EXPECT_EQ(tok.model_type(), "WordPiece");
  EXPECT_EQ(tok.token_to_id("[CLS]"), 2);
  EXPECT_EQ(tok.id_to_token(5), "hello");
  EXPECT_FALSE(tok.id_to_token(100000).has_value());
  EXPECT_FALSE(tok.token_to_id("nope").has_value());
  EXPECT_EQ(tok.vocab_size(), testing::small_words().size() + 5);
}

TEST_F(BertLike, EmptyAndSpaceOnlyInputs) {
  EXPECT_EQ(tok.encode("").ids, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(tok.encode("   \t\n", {.add_special_tokens = false}).ids.size(), 0u);
  EXPECT_EQ(tok.encode_pair("", "").ids, (std::vector<int32_t>{2, 3, 3}));
}

TEST_F(BertLike, InvalidUtf8IsAnError) {
  EXPECT_THROW(tok.encode("abc\xFF"), il::Error);
  EXPECT_THROW(tok.encode_pair("ok", "\xC3"), il::Error);
  try {
    tok.encode("ab\xED\xA0\x80");
    FAIL();
  } catch (const il::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not valid UTF-8 (byte 2"), std::string::npos)
        << e.what();
  }
}

TEST_F(BertLike, ConcurrentEncodesAgreeWithSerialOnes) {
  const std::vector<std::string> pieces = {"hello", "world", "unaffable", ",", " ", "CAF\xC3\x89",
                                           "\xE4\xB8\xAD", "[MASK]", "zzz", "!", "don't"};
  std::mt19937 rng(42);
  std::vector<std::string> texts(200);
  for (auto& t : texts) {
    for (int k = 0; k < 12; ++k) t += pieces[rng() % pieces.size()] + (rng() % 2 ? " " : "");
  }
  std::vector<Encoding> serial;
  for (const auto& t : texts) serial.push_back(tok.encode_pair(t, t, {.max_length = 24}));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(8, 0);
  for (int w = 0; w < 8; ++w) {
    threads.emplace_back([&, w] {
      for (int round = 0; round < 5; ++round) {
        for (std::size_t i = w % 3; i < texts.size(); ++i) {
          const Encoding e = tok.encode_pair(texts[i], texts[i], {.max_length = 24});
          mismatches[w] += e.ids != serial[i].ids || e.offsets != serial[i].offsets;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

}  // namespace
}  // namespace il::text
