// Truncation as EncodeOptions asks for it, with the library's rules.
#include <gtest/gtest.h>

#include "core/error.h"
#include "test_tokenizers.h"

namespace il::text {
namespace {

using testing::json;
using testing::load;

std::string words(int n, const std::string& w) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? " " : "") + w;
  return s;
}

std::pair<std::size_t, std::size_t> lengths(const Encoding& e) {
  std::size_t a = 0, b = 0;
  for (int8_t s : e.sequence_ids) {
    a += s == 0;
    b += s == 1;
  }
  return {a, b};
}

class Truncation : public ::testing::Test {
 protected:
  Tokenizer tok = load(testing::bert_like());
};

TEST_F(Truncation, SingleSequenceRightAndLeft) {
  EncodeOptions o{.max_length = 5};
  Encoding e = tok.encode("a b a b a b", o);
  EXPECT_EQ(e.ids.size(), 5u);
  EXPECT_EQ(e.offsets[1], (std::pair<uint32_t, uint32_t>{0, 1}));
  o.direction = TruncationDirection::kLeft;
  e = tok.encode("a b a b a b", o);
  EXPECT_EQ(e.offsets[1], (std::pair<uint32_t, uint32_t>{6, 7}));
  EXPECT_EQ(e.offsets[3], (std::pair<uint32_t, uint32_t>{10, 11}));
  // max_length counts the special tokens only when they are added.
  e = tok.encode("a b a b a b", {.add_special_tokens = false, .max_length = 5});
  EXPECT_EQ(e.ids.size(), 5u);
}

TEST_F(Truncation, LongestFirstSharesTheBudget) {
  const EncodeOptions o{.max_length = 10};  // 7 tokens for the pair
  EXPECT_EQ(lengths(tok.encode_pair(words(10, "a"), words(4, "b"), o)), (std::pair<size_t, size_t>{4, 3}));
  EXPECT_EQ(lengths(tok.encode_pair(words(2, "a"), words(9, "b"), o)), (std::pair<size_t, size_t>{2, 5}));
  EXPECT_EQ(lengths(tok.encode_pair(words(3, "a"), words(3, "b"), o)), (std::pair<size_t, size_t>{3, 3}));
}

TEST_F(Truncation, LongestFirstSeesPairsCutShortAtMaxLength) {
  // The library stops tokenizing each sequence of a pair after the word that brings it to
  // max_length tokens: "kebab" is three tokens, so the first sequence counts 9 against the
  // second's 8, and the longer one gets the odd token.
  const EncodeOptions o{.max_length = 8};
  EXPECT_EQ(lengths(tok.encode_pair(words(4, "kebab"), words(9, "b"), o)),
            (std::pair<size_t, size_t>{3, 2}));
  EXPECT_EQ(lengths(tok.encode_pair(words(12, "b"), words(9, "b"), o)),
            (std::pair<size_t, size_t>{2, 3}));
  EXPECT_EQ(lengths(tok.encode_pair(words(4, "kebab"), words(3, "kebab"), o)),
            (std::pair<size_t, size_t>{2, 3}));
}

TEST_F(Truncation, OnlyFirstAndOnlySecond) {
  EncodeOptions o{.max_length = 8, .strategy = TruncationStrategy::kOnlyFirst};
  EXPECT_EQ(lengths(tok.encode_pair(words(9, "a"), words(2, "b"), o)), (std::pair<size_t, size_t>{3, 2}));
  EXPECT_THROW(tok.encode_pair(words(2, "a"), words(9, "b"), o), il::Error);
  o.strategy = TruncationStrategy::kOnlySecond;
  EXPECT_EQ(lengths(tok.encode_pair(words(2, "a"), words(9, "b"), o)), (std::pair<size_t, size_t>{2, 3}));
  EXPECT_THROW(tok.encode(words(9, "a"), o), il::Error);  // no second sequence
  EXPECT_EQ(tok.encode(words(5, "a"), o).ids.size(), 7u);  // fits: nothing to cut
}

TEST_F(Truncation, RefusingToTruncateNamesTheCounts) {
  const EncodeOptions o{.max_length = 6, .truncate = false};
  EXPECT_EQ(tok.encode("a b a b", o).ids.size(), 6u);
  try {
    tok.encode("a b a b a", o);
    FAIL() << "expected il::Error";
  } catch (const il::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("7 tokens"), std::string::npos) << m;
    EXPECT_NE(m.find("maximum of 6"), std::string::npos) << m;
  }
}

TEST_F(Truncation, MaxLengthBelowTheSpecialTokensIsAnError) {
  EXPECT_THROW(tok.encode_pair("a b", "c", {.max_length = 2}), il::Error);
}

}  // namespace
}  // namespace il::text
