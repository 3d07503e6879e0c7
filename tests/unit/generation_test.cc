// The generation runtime's host parts: picking tokens (runtime/sampling.h), streaming
// detokenization (runtime/detokenizer.h). (M-RoPE positions: models/glm_ocr_prompt.h and its test.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <vector>

#include "core/error.h"
#include "runtime/detokenizer.h"
#include "runtime/sampling.h"
#include "text/tokenizer.h"

namespace il::runtime {
namespace {

int32_t pick(const SamplingOptions& o, std::vector<float> logits, const std::vector<int32_t>& history) {
  TokenSampler s(o);
  return s.pick(logits, history);
}

TEST(Sampling, GreedyTakesTheFirstLargest) {
  EXPECT_EQ(pick({}, {0.5f, 2.0f, 2.0f, -1.0f}, {}), 1);
}

// transformers' rule: a seen token's positive logit divided by the penalty, a negative one
// multiplied; each token once however often it was seen.
TEST(Sampling, RepetitionPenaltyFollowsTransformers) {
  SamplingOptions o;
  o.repetition_penalty = 2.0f;
  TokenSampler s(o);
  std::vector<float> logits = {3.0f, -1.0f, 1.4f};
  const std::vector<int32_t> history = {0, 1, 0, 0};
  (void)s.pick(logits, history);
  EXPECT_FLOAT_EQ(logits[0], 1.5f);
  EXPECT_FLOAT_EQ(logits[1], -2.0f);
  EXPECT_FLOAT_EQ(logits[2], 1.4f);
  EXPECT_EQ(pick(o, {3.0f, -1.0f, 1.6f}, {0}), 2);
}

TEST(Sampling, NgramGuardBansRepeatsInItsWindowUnlessWhitelisted) {
  SamplingOptions o;
  o.no_repeat_ngram = 2;
  const std::vector<float> prefer6 = {0, 0, 0, 0, 0, 0, 5.0f, 1.0f};
  // "5 6" occurred: after a 5, 6 is banned; 7 is next best.
  EXPECT_EQ(pick(o, prefer6, {5, 6, 7, 5}), 7);
  // A window of the last 2 tokens ("7 5") holds no "5 x" bigram: 6 is allowed.
  o.ngram_window = 2;
  EXPECT_EQ(pick(o, prefer6, {5, 6, 7, 5}), 6);
  // Whitelisted (table markup): may repeat.
  o.ngram_window = 0;
  o.ngram_whitelist = {6};
  EXPECT_EQ(pick(o, prefer6, {5, 6, 7, 5}), 6);
  o.ngram_whitelist = {5};
  EXPECT_EQ(pick(o, prefer6, {5, 6, 7, 5}), 6);
  // Trigrams: "1 2 3" occurred; after "1 2", 3 is banned.
  SamplingOptions t;
  t.no_repeat_ngram = 3;
  EXPECT_EQ(pick(t, {0, 0, 0, 4.0f, 3.0f}, {1, 2, 3, 1, 2}), 4);
}

// guarded() counts the picks where the ban took the most likely token away (the loops broken),
// not every ban.
TEST(Sampling, NgramGuardCountsTheLoopsItBreaks) {
  SamplingOptions o;
  o.no_repeat_ngram = 2;
  TokenSampler s(o);
  std::vector<float> prefer6 = {0, 0, 0, 0, 0, 0, 5.0f, 1.0f};
  EXPECT_EQ(s.pick(prefer6, std::vector<int32_t>{5, 6, 7, 5}), 7);  // 6 banned, and it was the best
  EXPECT_EQ(s.guarded(), 1u);
  std::vector<float> prefer7 = {0, 0, 0, 0, 0, 0, 1.0f, 5.0f};
  EXPECT_EQ(s.pick(prefer7, std::vector<int32_t>{5, 6, 7, 5}), 7);  // 6 banned, but 7 was best anyway
  EXPECT_EQ(s.guarded(), 1u);
  std::vector<float> again = {0, 0, 0, 0, 0, 0, 5.0f, 1.0f};
  EXPECT_EQ(s.pick(again, std::vector<int32_t>{1, 2, 3, 4}), 6);  // nothing to ban
  EXPECT_EQ(s.guarded(), 1u);
}

// When the pick is the logits' first maximum as they stand, the generator takes it on the device
// (Executor::argmax_rows) and never calls pick(): only plain greedy with no ban due qualifies.
TEST(Sampling, PlainArgmaxOnlyWhereNothingChangesTheLogits) {
  const std::vector<int32_t> loop = {5, 6, 7, 5};  // after a 5, the guard of bigrams bans 6
  EXPECT_TRUE(TokenSampler(SamplingOptions{}).picks_plain_argmax(loop));
  SamplingOptions o;
  o.temperature = 0.7f;
  EXPECT_FALSE(TokenSampler(o).picks_plain_argmax(loop));
  o = {};
  o.repetition_penalty = 1.1f;
  EXPECT_FALSE(TokenSampler(o).picks_plain_argmax(loop));
  o = {};
  o.no_repeat_ngram = 2;
  EXPECT_FALSE(TokenSampler(o).picks_plain_argmax(loop));
  EXPECT_TRUE(TokenSampler(o).picks_plain_argmax(std::vector<int32_t>{5, 6, 7, 8}));  // no "8 x" yet
  EXPECT_TRUE(TokenSampler(o).picks_plain_argmax(std::vector<int32_t>{}));
  o.ngram_window = 2;  // the window "7 5" holds no "5 x"
  EXPECT_TRUE(TokenSampler(o).picks_plain_argmax(loop));
  o.ngram_window = 0;
  o.ngram_whitelist = {5};  // the tail holds a whitelisted token: nothing is banned
  EXPECT_TRUE(TokenSampler(o).picks_plain_argmax(loop));
  o = {};
  o.no_repeat_ngram = 1;  // every token seen is banned
  EXPECT_FALSE(TokenSampler(o).picks_plain_argmax(std::vector<int32_t>{3}));
  // Where it says yes, pick() returns the first maximum and counts no guarded pick.
  o = {};
  o.no_repeat_ngram = 3;
  TokenSampler s(o);
  const std::vector<int32_t> h = {1, 2, 3, 1, 4};
  ASSERT_TRUE(s.picks_plain_argmax(h));
  std::vector<float> logits = {0, 0, 0, 2.0f, 2.0f};
  EXPECT_EQ(s.pick(logits, h), 3);
  EXPECT_EQ(s.guarded(), 0u);
}

TEST(Sampling, DrawsDependOnTheSeedAlone) {
  SamplingOptions o;
  o.temperature = 1.0f;
  o.seed = 42;
  const std::vector<float> logits = {0.1f, 0.3f, 0.2f, 0.5f, 0.0f};
  std::vector<int32_t> a, b;
  TokenSampler sa(o), sb(o);
  for (int i = 0; i < 50; ++i) {
    std::vector<float> l = logits;
    a.push_back(sa.pick(l, std::vector<int32_t>{}));
    l = logits;
    b.push_back(sb.pick(l, std::vector<int32_t>{}));
  }
  EXPECT_EQ(a, b);
  o.seed = 43;
  TokenSampler sc(o);
  std::vector<int32_t> c;
  for (int i = 0; i < 50; ++i) {
    std::vector<float> l = logits;
    c.push_back(sc.pick(l, std::vector<int32_t>{}));
  }
  EXPECT_NE(a, c);
}

TEST(Sampling, TemperatureTopKAndTopPShapeTheDraws) {
  // Two tokens at probabilities 1/4 and 3/4 (logits 0 and ln 3): the draws follow them.
  SamplingOptions o;
  o.temperature = 1.0f;
  o.seed = 1;
  TokenSampler s(o);
  int ones = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    std::vector<float> l = {0.0f, std::log(3.0f)};
    ones += s.pick(l, std::vector<int32_t>{}) == 1;
  }
  EXPECT_NEAR(static_cast<double>(ones) / n, 0.75, 0.03);
  // top_k 1 and a tiny top_p leave the most likely token alone.
  SamplingOptions k = o;
  k.top_k = 1;
  SamplingOptions p = o;
  p.top_p = 0.01f;
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(pick(k, {0.0f, 1.0f, 0.9f}, {}), 1);
    EXPECT_EQ(pick(p, {0.0f, 1.0f, 0.9f}, {}), 1);
  }
  // top_p 0.7 over (0.5, 0.3, 0.2): the first two only.
  SamplingOptions q = o;
  q.top_p = 0.7f;
  TokenSampler sq(q);
  std::map<int32_t, int> seen;
  for (int i = 0; i < 2000; ++i) {
    std::vector<float> l = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
    ++seen[sq.pick(l, std::vector<int32_t>{})];
  }
  EXPECT_EQ(seen.count(2), 0u);
  EXPECT_NEAR(seen[0] / 2000.0, 0.625, 0.04);
}

TEST(Sampling, RefusesBadOptions) {
  SamplingOptions o;
  o.temperature = -1.0f;
  EXPECT_THROW(TokenSampler{o}, Error);
  o = {};
  o.top_p = 0.0f;
  EXPECT_THROW(TokenSampler{o}, Error);
  o = {};
  o.repetition_penalty = 0.0f;
  EXPECT_THROW(TokenSampler{o}, Error);
  o = {};
  o.max_new_tokens = 0;
  EXPECT_THROW(TokenSampler{o}, Error);
  o = {};
  o.stop_strings = {""};
  EXPECT_THROW(TokenSampler{o}, Error);
}

TEST(Detokenizer, EndsMidCharacter) {
  EXPECT_FALSE(ends_mid_character("abc"));
  EXPECT_FALSE(ends_mid_character("h\xC3\xA9"));
  EXPECT_TRUE(ends_mid_character("h\xC3"));
  EXPECT_TRUE(ends_mid_character("\xE6\x97"));
  EXPECT_FALSE(ends_mid_character("\xE6\x97\xA5"));
  EXPECT_TRUE(ends_mid_character("a\xF0\x9F\x98"));
}

// A byte-level BPE tokenizer (the Qwen3 fixture's) splits characters outside its small vocabulary
// into byte tokens: streaming them one at a time gives the whole text, never a piece that ends
// inside a character.
TEST(Detokenizer, StreamsWholeCharactersOnly) {
  const char* src = std::getenv("IL_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  const text::Tokenizer tok = text::Tokenizer::from_file(std::string(src) + "/tests/fixtures/qwen3-embed/tokenizer.json");
  const std::string text = "naïve café → 日本語 😀 ok";
  text::EncodeOptions eo;
  eo.add_special_tokens = false;
  const std::vector<int32_t> ids = tok.encode(text, eo).ids;
  Detokenizer d(tok);
  std::string joined;
  std::size_t empty = 0;
  for (int32_t id : ids) {
    const std::string piece = d.push(id);
    EXPECT_FALSE(ends_mid_character(piece)) << "piece ends inside a character";
    EXPECT_EQ(piece.find("\xEF\xBF\xBD"), std::string::npos) << "a replacement character was emitted";
    empty += piece.empty();
    joined += piece;
  }
  EXPECT_EQ(joined, tok.decode(ids, true));
  EXPECT_EQ(joined, text);
  EXPECT_GT(empty, 0u) << "the fixture tokenizer was expected to split some character into byte tokens";
}

}  // namespace
}  // namespace il::runtime
