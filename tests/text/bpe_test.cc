// The BPE model on small hand-made vocabularies: merge order, unknown characters, byte fallback,
// prefix / suffix, ignore_merges, and the load errors for malformed models.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "test_tokenizers.h"

namespace il::text {
namespace {

using testing::json;

// A tokenizer.json with a BPE model over `tokens` (ids in order) and `merges`, no other
// component; `model` entries override the model's options.
json bpe_doc(const std::vector<std::string>& tokens, const json& merges, const json& model = {}) {
  json vocab = json::object();
  for (std::size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = i;
  json m = {{"type", "BPE"},          {"dropout", nullptr},     {"unk_token", nullptr},
            {"fuse_unk", false},      {"byte_fallback", false}, {"ignore_merges", false},
            {"vocab", vocab},         {"merges", merges}};
  for (const auto& [k, v] : model.items()) m[k] = v;
  return {{"version", "1.0"}, {"added_tokens", json::array()}, {"model", m}};
}

struct Tokens {
  std::vector<std::string> text;
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
};

Tokens tokenize(const Tokenizer& t, std::string_view text) {
  const Encoding e = t.encode(text);
  Tokens out;
  for (const int32_t id : e.ids) out.text.push_back(t.id_to_token(id).value_or("?"));
  out.offsets = e.offsets;
  return out;
}

using Strings = std::vector<std::string>;
using Offsets = std::vector<std::pair<uint32_t, uint32_t>>;

std::string load_error(const json& j) {
  try {
    testing::load(j);
  } catch (const il::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Bpe, AppliesTheLowestRankedMergeFirst) {
  const Strings vocab = {"a", "b", "c", "ab", "bc", "abc"};
  // (b, c) outranks (a, b): "abc" goes through "a" + "bc", which has a merge of its own.
  auto t = testing::load(bpe_doc(vocab, {"b c", "a b", "a bc"}));
  EXPECT_EQ(tokenize(t, "abc").text, (Strings{"abc"}));
  // Without the (a, bc) merge the word stops at "a" + "bc", although "ab" + "c" was possible.
  t = testing::load(bpe_doc(vocab, {"b c", "a b"}));
  EXPECT_EQ(tokenize(t, "abc").text, (Strings{"a", "bc"}));
  t = testing::load(bpe_doc(vocab, {"a b", "b c"}));
  EXPECT_EQ(tokenize(t, "abc").text, (Strings{"ab", "c"}));
}

TEST(Bpe, EqualRanksMergeLeftmostFirst) {
  auto t = testing::load(bpe_doc({"a", "aa"}, {"a a"}));
  EXPECT_EQ(tokenize(t, "aaa").text, (Strings{"aa", "a"}));
  const Tokens four = tokenize(t, "aaaaa");
  EXPECT_EQ(four.text, (Strings{"aa", "aa", "a"}));
  EXPECT_EQ(four.offsets, (Offsets{{0, 2}, {2, 4}, {4, 5}}));
}

TEST(Bpe, MergesAsPairsAndLegacyStringsAgree) {
  const Strings vocab = {"h", "e", "l", "o", "he", "ll", "hell", "hello"};
  const auto strings = testing::load(
      bpe_doc(vocab, {"#version: 0.2", "h e", "l l", "he ll", "hell o"}));
  const auto pairs = testing::load(bpe_doc(
      vocab, json::array({{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}})));
  EXPECT_EQ(tokenize(strings, "hello").text, (Strings{"hello"}));
  EXPECT_EQ(tokenize(pairs, "hello").text, (Strings{"hello"}));
  EXPECT_EQ(tokenize(pairs, "hellohe").text, (Strings{"hello", "he"}));
}

TEST(Bpe, UnknownCharactersAreOneTokenEachOrFused) {
  const Strings vocab = {"<unk>", "a", "b"};
  auto t = testing::load(bpe_doc(vocab, json::array(), {{"unk_token", "<unk>"}}));
  Tokens r = tokenize(t, "acéb");
  EXPECT_EQ(r.text, (Strings{"a", "<unk>", "<unk>", "b"}));
  EXPECT_EQ(r.offsets, (Offsets{{0, 1}, {1, 2}, {2, 4}, {4, 5}}));

  t = testing::load(bpe_doc(vocab, json::array(), {{"unk_token", "<unk>"}, {"fuse_unk", true}}));
  r = tokenize(t, "acéb");
  EXPECT_EQ(r.text, (Strings{"a", "<unk>", "b"}));
  EXPECT_EQ(r.offsets, (Offsets{{0, 1}, {1, 4}, {4, 5}}));

  // Without an unknown token the library drops the character.
  t = testing::load(bpe_doc(vocab, json::array()));
  EXPECT_EQ(tokenize(t, "acb").text, (Strings{"a", "b"}));

  // An unknown token missing from the vocabulary fails the encode that needs it, not the load.
  t = testing::load(bpe_doc({"a"}, json::array(), {{"unk_token", "<nope>"}}));
  EXPECT_EQ(tokenize(t, "aa").text, (Strings{"a", "a"}));
  EXPECT_THROW(t.encode("ab"), il::Error);
}

TEST(Bpe, ByteFallbackSpellsUnknownCharactersAsBytes) {
  // "é" is C3 A9; "€" is E2 82 AC and <0x82> is missing, so it falls back to <unk>.
  const Strings vocab = {"<unk>", "a", "<0xC3>", "<0xA9>", "<0xE2>", "<0xAC>"};
  const auto t = testing::load(
      bpe_doc(vocab, json::array(), {{"unk_token", "<unk>"}, {"byte_fallback", true}}));
  const Tokens r = tokenize(t, "aé€a");
  EXPECT_EQ(r.text, (Strings{"a", "<0xC3>", "<0xA9>", "<unk>", "a"}));
  // A byte token covers the whole character it is part of, as in the library.
  EXPECT_EQ(r.offsets, (Offsets{{0, 1}, {1, 3}, {1, 3}, {3, 6}, {6, 7}}));
  // Byte tokens decode back to the character.
  EXPECT_EQ(t.decode(t.encode("aé").ids), "a <0xC3> <0xA9>");  // no decoder: joined by spaces
}

TEST(Bpe, ByteFallbackTokensOfAPrefixGetEmptyOffsetsAtTheWordEnd) {
  // "x" after the first character is spelled "##x": three byte tokens for one byte of the word.
  // The first covers it; the two the word has no bytes for get the empty range at its end (the
  // library cannot convert their offsets at all), never a range read past the word.
  const Strings vocab = {"<unk>", "a", "<0x23>", "<0x78>"};
  json doc = bpe_doc(vocab, json::array(),
                     {{"unk_token", "<unk>"},
                      {"byte_fallback", true},
                      {"continuing_subword_prefix", "##"}});
  doc["pre_tokenizer"] = {{"type", "WhitespaceSplit"}};
  const auto t = testing::load(doc);
  const Strings word = {"a", "<0x23>", "<0x23>", "<0x78>"};
  Tokens r = tokenize(t, "ax");
  EXPECT_EQ(r.text, word);
  EXPECT_EQ(r.offsets, (Offsets{{0, 1}, {1, 2}, {2, 2}, {2, 2}}));
  r = tokenize(t, "ax ax");
  EXPECT_EQ(r.offsets,
            (Offsets{{0, 1}, {1, 2}, {2, 2}, {2, 2}, {3, 4}, {4, 5}, {5, 5}, {5, 5}}));
}

TEST(Bpe, ContinuingSubwordPrefixAndEndOfWordSuffix) {
  const Strings vocab = {"<unk>", "a", "##b", "##c</w>", "ab", "abc</w>", "c</w>", "##b</w>"};
  const json merges = {"a ##b", "ab ##c</w>"};
  const auto t = testing::load(bpe_doc(vocab, merges,
                                       {{"unk_token", "<unk>"},
                                        {"continuing_subword_prefix", "##"},
                                        {"end_of_word_suffix", "</w>"}}));
  EXPECT_EQ(tokenize(t, "abc").text, (Strings{"abc</w>"}));
  EXPECT_EQ(tokenize(t, "c").text, (Strings{"c</w>"}));
  const Tokens r = tokenize(t, "abb");
  EXPECT_EQ(r.text, (Strings{"ab", "##b</w>"}));
  EXPECT_EQ(r.offsets, (Offsets{{0, 2}, {2, 3}}));
}

TEST(Bpe, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  const Strings vocab = {"a", "b", "c", "ab", "abc", "bc"};
  // The merges alone would give "ab" + "c".
  const json merges = {"a b"};
  auto t = testing::load(bpe_doc(vocab, merges));
  EXPECT_EQ(tokenize(t, "abc").text, (Strings{"ab", "c"}));
  t = testing::load(bpe_doc(vocab, merges, {{"ignore_merges", true}}));
  EXPECT_EQ(tokenize(t, "abc").text, (Strings{"abc"}));
  EXPECT_EQ(tokenize(t, "abcc").text, (Strings{"ab", "c", "c"}));
}

TEST(Bpe, ModelTypeAndVocabulary) {
  const auto t = testing::load(bpe_doc({"a", "b", "ab"}, {"a b"}));
  EXPECT_EQ(t.model_type(), "BPE");
  EXPECT_EQ(t.vocab_size(), 3u);
  EXPECT_EQ(t.token_to_id("ab"), 2);
  EXPECT_EQ(t.id_to_token(1), "b");
}

TEST(Bpe, EncodingIsThreadSafe) {
  // A regex split and a byte-level mapping in front of the model: every piece with per-thread
  // scratch space runs on four threads at once and must give the sequential results.
  json doc = bpe_doc({"a", "b", "ab", "\u0120", "\u0120a", "\u0120ab", "c"},
                     {"a b", "\u0120 a", "\u0120a b"});
  doc["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  const auto t = testing::load(doc);
  std::vector<std::string> texts;
  for (int i = 0; i < 64; ++i) {
    std::string s;
    for (int k = 0; k <= i % 9; ++k) s += (k + i) % 3 == 0 ? "ab " : (k + i) % 3 == 1 ? "a" : "cab";
    texts.push_back(s);
  }
  std::vector<std::vector<int32_t>> want;
  for (const auto& s : texts) want.push_back(t.encode(s).ids);
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      for (int round = 0; round < 50; ++round) {
        for (std::size_t i = 0; i < texts.size(); ++i) bad[w] += t.encode(texts[i]).ids != want[i];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, (std::vector<int>{0, 0, 0, 0}));
}

TEST(BpeErrors, MalformedMergesNameTheField) {
  EXPECT_NE(load_error(bpe_doc({"a", "b", "ab"}, {"a b c"}))
                .find("tokenizer.json: model.merges[0] must be two tokens separated by one space"),
            std::string::npos);
  EXPECT_NE(load_error(bpe_doc({"a", "b", "ab"}, {"a b", "a d"}))
                .find("model.merges[1] uses the token \"d\", which is not in model.vocab"),
            std::string::npos);
  EXPECT_NE(load_error(bpe_doc({"a", "b"}, {"a b"}))
                .find("model.merges[0] makes the token \"ab\", which is not in model.vocab"),
            std::string::npos);
  EXPECT_NE(load_error(bpe_doc({"a", "b", "ab"}, json::array({json::array({"a"})})))
                .find("model.merges[0] must be a string \"a b\" or a pair"),
            std::string::npos);
  EXPECT_NE(load_error(bpe_doc({"a", "b", "ab"}, json::array({1})))
                .find("model.merges[0] must be a string"),
            std::string::npos);
  EXPECT_NE(load_error(bpe_doc({"a"}, "a b")).find("model.merges must be an array"),
            std::string::npos);
  json no_merges = bpe_doc({"a"}, json::array());
  no_merges["model"].erase("merges");
  EXPECT_NE(load_error(no_merges).find("model.merges is missing"), std::string::npos);
}

TEST(BpeErrors, DropoutIsRefusedUnlessZero) {
  EXPECT_NE(load_error(bpe_doc({"a"}, json::array(), {{"dropout", 0.1}}))
                .find("model.dropout is 0.1: BPE dropout is random"),
            std::string::npos);
  EXPECT_EQ(load_error(bpe_doc({"a"}, json::array(), {{"dropout", 0.0}})), "(no error)");
  EXPECT_NE(load_error(bpe_doc({"a"}, json::array(), {{"dropout", "x"}}))
                .find("model.dropout must be a number"),
            std::string::npos);
}

TEST(BpeErrors, WrongOptionTypesNameTheField) {
  EXPECT_NE(load_error(bpe_doc({"a"}, json::array(), {{"fuse_unk", "yes"}}))
                .find("model.fuse_unk must be a boolean"),
            std::string::npos);
  EXPECT_NE(load_error(bpe_doc({"a"}, json::array(), {{"unk_token", 3}}))
                .find("model.unk_token must be a string"),
            std::string::npos);
}

TEST(BpeErrors, InvalidUtf8InputIsReportedNotChanged) {
  const auto t = testing::load(bpe_doc({"a", "b", "ab"}, {"a b"}));
  for (const std::string bad : {"a\xff", "\xc3", "ab\xed\xa0\x80", "\xf8\x88\x80\x80\x80"}) {
    try {
      t.encode(bad);
      ADD_FAILURE() << "no error for invalid UTF-8";
    } catch (const il::Error& e) {
      EXPECT_NE(std::string(e.what()).find("not valid UTF-8"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(t.encode_pair("ab", "\x80"), il::Error);
}

}  // namespace
}  // namespace il::text
