// The Precompiled normalizer on hand-made charsmaps: grapheme-wise replacement with the
// library's alignments (read back through token offsets; each expectation was checked against
// tokenizers 0.23.2 with the same charsmap), and malformed charsmaps.
#include <gtest/gtest.h>

#include "sentencepiece_test_util.h"
#include "text/precompiled.h"

namespace il::text {
namespace {

using namespace spm_testing;

// Every normalised character becomes one token (single-character pieces, unknowns as <unk>),
// so the offsets show the alignment of each character.
Tokenizer with_rules(const std::map<std::string, std::string>& rules) {
  json doc = unigram_doc({{"<unk>", 0.0}, {"a", -1.0}, {"b", -1.0}, {"e", -1.0}, {"f", -1.0},
                          {"i", -1.0}, {"x", -1.0}, {"E", -1.0}, {"\u00e9", -1.0}, {" ", -1.0},
                          {"\u0301", -1.0}});
  doc["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", base64(charsmap(rules))}};
  return load(doc);
}

TEST(Precompiled, OneToOneReplacementKeepsAlignments) {
  const Tokenizer t = with_rules({{"A", "a"}, {"B", "b"}});
  const Encoding e = t.encode("AbB");
  EXPECT_EQ(tokens_of(t, e), (std::vector<std::string>{"a", "b", "b"}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {1, 2}, {2, 3}}));
}

TEST(Precompiled, LongerReplacementInsertsItsLastCharacters) {
  const Tokenizer t = with_rules({{"\xEF\xAC\x81", "fi"}});  // the ligature U+FB01
  const Encoding e = t.encode("\xEF\xAC\x81x");
  EXPECT_EQ(tokens_of(t, e), (std::vector<std::string>{"f", "i", "x"}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 3}, {0, 3}, {3, 4}}));
}

TEST(Precompiled, RemovedCharactersGoWithTheCharacterBefore) {
  const Tokenizer t = with_rules({{"\x01", ""}});
  Encoding e = t.encode("a\x01" "b");
  EXPECT_EQ(tokens_of(t, e), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {2, 3}}));
  // With nothing before it, nothing takes the removed character: the library's alignments then
  // shift, and the next character is read back onto the removed one.
  e = t.encode("\x01" "ab");
  EXPECT_EQ(tokens_of(t, e), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {1, 2}}));
}

TEST(Precompiled, GraphemesAreReplacedWholeByTheirShortestMappedPrefix) {
  // e + combining acute is one grapheme; its own rule applies to it whole. The shorter
  // replacement takes the place of the first character and drops the mark, so it reads back
  // onto "e" alone (as in the library).
  Tokenizer t = with_rules({{"e\xCC\x81", "\xC3\xA9"}});
  Encoding e = t.encode("be\xCC\x81");
  EXPECT_EQ(tokens_of(t, e), (std::vector<std::string>{"b", "\u00e9"}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {1, 2}}));
  // With a rule for "e" alone, the grapheme gets e's replacement and loses the mark.
  t = with_rules({{"e", "E"}});
  e = t.encode("e\xCC\x81" "b");
  EXPECT_EQ(tokens_of(t, e), (std::vector<std::string>{"E", "b"}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {3, 4}}));
  // Graphemes of 6 bytes or more go character by character: the marks stay.
  e = t.encode("e\xCC\x81\xCC\x81\xCC\x81");
  EXPECT_EQ(tokens_of(t, e), (std::vector<std::string>{"E", "\u0301", "\u0301", "\u0301"}));
}

TEST(Precompiled, TextWithoutMappedCharactersIsUntouched) {
  const Tokenizer t = with_rules({{"A", "a"}});
  const Encoding e = t.encode("ab x");
  EXPECT_EQ(tokens_of(t, e), (std::vector<std::string>{"a", "b", " ", "x"}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {1, 2}, {2, 3}, {3, 4}}));
}

json with_charsmap(const json& value) {
  json doc = unigram_doc({{"<unk>", 0.0}, {"a", -1.0}});
  doc["normalizer"] = {{"type", "Sequence"},
                       {"normalizers", json::array({{{"type", "Lowercase"}},
                                                    {{"type", "Precompiled"},
                                                     {"precompiled_charsmap", value}}})}};
  return doc;
}

TEST(Precompiled, MalformedCharsmapsAreRefusedAtLoad) {
  const std::string field = "tokenizer.json: normalizer.normalizers[1].precompiled_charsmap ";
  // The library cannot parse an empty charsmap either (it aborts while loading).
  EXPECT_EQ(load_error(with_charsmap("")),
            field + "cannot be parsed: shorter than its 4-byte header");
  EXPECT_EQ(load_error(with_charsmap("AAA")), field + "is not valid base64");
  EXPECT_EQ(load_error(with_charsmap("AAB=")), field + "is not valid base64");  // stray bits
  EXPECT_EQ(load_error(with_charsmap("A=AA")), field + "is not valid base64");
  EXPECT_EQ(load_error(with_charsmap(nullptr)), field + "must be a string, not null");
  EXPECT_EQ(load_error(with_charsmap(base64(std::string("\x64\0\0\0\0\0\0\0", 8)))),
            field + "cannot be parsed: its header announces a 100-byte array but only 4 bytes "
                    "follow");
  EXPECT_EQ(load_error(with_charsmap(base64(std::string("\4\0\0\0\0\0\0\0\xFF", 9)))),
            field + "cannot be parsed: its replacement strings are not valid UTF-8 (byte 0 of 1)");
  json doc = with_charsmap("AAAAAA==");
  doc["normalizer"]["normalizers"][1].erase("precompiled_charsmap");
  EXPECT_EQ(load_error(doc), "tokenizer.json: normalizer.normalizers[1].precompiled_charsmap "
                             "is missing");
}

TEST(Precompiled, AnArrayPointingOutsideItselfFailsTheEncodeNotTheProcess) {
  // One unit whose offset sends every lookup past the end (the library would panic).
  const uint32_t unit = 1000u << 10;
  std::string blob("\4\0\0\0", 4);
  for (int k = 0; k < 4; ++k) blob.push_back(static_cast<char>((unit >> (8 * k)) & 0xFF));
  const Tokenizer t = load(with_charsmap(base64(blob)));
  EXPECT_THROW(t.encode("a"), il::Error);
  EXPECT_EQ(t.encode("").ids.size(), 0u);
}

}  // namespace
}  // namespace il::text
