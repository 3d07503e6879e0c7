// The Metaspace pre-tokenizer and decoder: spaces as "▁", the prepend schemes, split on and
// off, and the settings the library refuses.
#include <gtest/gtest.h>

#include "sentencepiece_test_util.h"

namespace il::text {
namespace {

using namespace spm_testing;

const char* const kBar = "\u2581";

json metaspace(const char* scheme, bool split = true) {
  return {{"type", "Metaspace"}, {"replacement", kBar}, {"prepend_scheme", scheme},
          {"split", split}};
}

// Pieces for "Hey friend!" spelled with and without the replacement.
json doc_with(const json& pre_tokenizer) {
  json doc = unigram_doc({{"<unk>", 0.0},
                          {"\u2581Hey", -1.0},
                          {"Hey", -1.0},
                          {"\u2581friend!", -1.0},
                          {"\u2581", -2.0},
                          {"<s>", -1.0},
                          {"how", -1.0}});
  doc["pre_tokenizer"] = pre_tokenizer;
  doc["decoder"] = pre_tokenizer;
  doc["added_tokens"] = json::array({{{"id", 5}, {"content", "<s>"}, {"single_word", false},
                                      {"lstrip", false}, {"rstrip", false},
                                      {"normalized", false}, {"special", true}}});
  return doc;
}

TEST(Metaspace, SpacesBecomeTheReplacementAndStartEachWord) {
  const Tokenizer t = load(doc_with(metaspace("always")));
  Encoding e = t.encode("Hey friend!");
  EXPECT_EQ(tokens_of(t, e), (std::vector<std::string>{"\u2581Hey", "\u2581friend!"}));
  // The prepended replacement belongs to the first character, a replaced space to the space.
  EXPECT_EQ(e.offsets, (Offsets{{0, 3}, {3, 11}}));
  e = t.encode("Hey   friend!");
  EXPECT_EQ(tokens_of(t, e),
            (std::vector<std::string>{"\u2581Hey", "\u2581", "\u2581", "\u2581friend!"}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 3}, {3, 4}, {4, 5}, {5, 13}}));
  EXPECT_EQ(t.decode(e.ids), "Hey   friend!");
}

TEST(Metaspace, PrependSchemes) {
  // "always": every split that does not start with the replacement gets one, also after an
  // added token; "first": only the split at the start of the text; "never": none.
  Tokenizer t = load(doc_with(metaspace("always")));
  EXPECT_EQ(tokens_of(t, t.encode("Hey<s>Hey")),
            (std::vector<std::string>{"\u2581Hey", "<s>", "\u2581Hey"}));
  t = load(doc_with(metaspace("first")));
  EXPECT_EQ(tokens_of(t, t.encode("Hey<s>Hey")),
            (std::vector<std::string>{"\u2581Hey", "<s>", "Hey"}));
  EXPECT_EQ(tokens_of(t, t.encode("<s>Hey")), (std::vector<std::string>{"<s>", "Hey"}));
  t = load(doc_with(metaspace("never")));
  EXPECT_EQ(tokens_of(t, t.encode("Hey friend!")),
            (std::vector<std::string>{"Hey", "\u2581friend!"}));
}

TEST(Metaspace, SplitOffKeepsOneWord) {
  json doc = doc_with(metaspace("always", false));
  doc["model"]["vocab"].push_back({"\u2581Hey\u2581friend!", -1.0});
  const Tokenizer t = load(doc);
  const Encoding e = t.encode("Hey friend!");
  EXPECT_EQ(tokens_of(t, e), (std::vector<std::string>{"\u2581Hey\u2581friend!"}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 11}}));
}

TEST(Metaspace, DecoderDropsTheFirstReplacementUnlessNothingWasPrepended) {
  const std::vector<int32_t> ids = {1, 3};  // ▁Hey ▁friend!
  EXPECT_EQ(load(doc_with(metaspace("always"))).decode(ids), "Hey friend!");
  EXPECT_EQ(load(doc_with(metaspace("first"))).decode(ids), "Hey friend!");
  EXPECT_EQ(load(doc_with(metaspace("never"))).decode(ids), " Hey friend!");
  // Skipped special tokens do not count as the first token.
  EXPECT_EQ(load(doc_with(metaspace("always"))).decode(std::vector<int32_t>{5, 1, 3}),
            "Hey friend!");
}

TEST(Metaspace, LegacyAddPrefixSpace) {
  json ms = {{"type", "Metaspace"}, {"replacement", kBar}, {"add_prefix_space", true},
             {"str_rep", kBar}};
  Tokenizer t = load(doc_with(ms));
  EXPECT_EQ(tokens_of(t, t.encode("Hey")), (std::vector<std::string>{"\u2581Hey"}));
  ms["add_prefix_space"] = false;
  ms["prepend_scheme"] = "never";
  t = load(doc_with(ms));
  EXPECT_EQ(tokens_of(t, t.encode("Hey")), (std::vector<std::string>{"Hey"}));
}

TEST(Metaspace, LoadErrorsNameTheField) {
  json ms = metaspace("sometimes");
  EXPECT_EQ(load_error(doc_with(ms)),
            "tokenizer.json: pre_tokenizer.prepend_scheme \"sometimes\" is not supported "
            "(supported: first, never, always)");
  ms = metaspace("always");
  ms["replacement"] = "ab";
  EXPECT_EQ(load_error(doc_with(ms)),
            "tokenizer.json: pre_tokenizer.replacement must be exactly one character, not \"ab\"");
  ms.erase("replacement");
  EXPECT_EQ(load_error(doc_with(ms)), "tokenizer.json: pre_tokenizer.replacement is missing");
  // The library refuses add_prefix_space false next to any scheme but "never", the default
  // "always" included.
  ms = {{"type", "Metaspace"}, {"replacement", kBar}, {"add_prefix_space", false}};
  EXPECT_EQ(load_error(doc_with(ms)),
            "tokenizer.json: pre_tokenizer.add_prefix_space is false, which does not match "
            "prepend_scheme \"always\"");
  ms = metaspace("first");
  ms["split"] = "yes";
  EXPECT_EQ(load_error(doc_with(ms)),
            "tokenizer.json: pre_tokenizer.split must be a boolean, not a string");
  // The decoder reads the same settings.
  json doc = doc_with(metaspace("always"));
  doc["decoder"]["prepend_scheme"] = "sometimes";
  EXPECT_NE(load_error(doc).find("decoder.prepend_scheme \"sometimes\""), std::string::npos);
}

}  // namespace
}  // namespace il::text
