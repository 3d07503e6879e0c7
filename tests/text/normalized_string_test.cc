// NormalizedString alignments and the Unicode helpers.
#include <gtest/gtest.h>

#include <vector>

#include "text/normalized_string.h"
#include "text/unicode.h"

namespace il::text {
namespace {

std::vector<std::pair<uint32_t, uint32_t>> per_char(const NormalizedString& s) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  std::size_t i = 0;
  while (i < s.text().size()) {
    out.emplace_back(s.alignments()[i].begin, s.alignments()[i].end);
    i += unicode::utf8_length(static_cast<unsigned char>(s.text()[i]));
  }
  return out;
}

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

TEST(NormalizedString, StartsAlignedCharByCharWithShift) {
  NormalizedString s;
  s.reset("a\xC3\xA9", 10);  // "aé"
  EXPECT_EQ(s.alignments().size(), 3u);
  EXPECT_EQ(per_char(s), (Ranges{{10, 11}, {11, 13}}));
  EXPECT_EQ(s.shift(), 10u);
}

TEST(NormalizedString, LowercaseKeepsAlignmentsAndExpandsDottedI) {
  NormalizedString s;
  s.reset("A\xC4\xB0Z", 0);  // "AİZ"
  s.lowercase();
  EXPECT_EQ(s.text(), "ai\xCC\x87z");  // i + U+0307
  EXPECT_EQ(per_char(s), (Ranges{{0, 1}, {1, 3}, {1, 3}, {3, 4}}));
}

TEST(NormalizedString, NfdAttributesMarksToTheirSourceCharacter) {
  NormalizedString s;
  s.reset("\xC3\xA9x", 0);  // "éx"
  s.nfd();
  EXPECT_EQ(s.text(), "e\xCC\x81x");
  EXPECT_EQ(per_char(s), (Ranges{{0, 2}, {0, 2}, {2, 3}}));
}

TEST(NormalizedString, NfcComposedCharacterKeepsTheBaseAlignment) {
  NormalizedString s;
  s.reset("e\xCC\x81x", 0);  // "e" + U+0301 + "x"
  s.nfc();
  EXPECT_EQ(s.text(), "\xC3\xA9x");
  // As in the library: the composite takes the base letter's place, the mark's bytes are lost.
  EXPECT_EQ(per_char(s), (Ranges{{0, 1}, {3, 4}}));
}

TEST(NormalizedString, NfcReordersAndComposes) {
  NormalizedString s;
  // a + U+0301 (above, class 230) + U+0323 (below, class 220): canonical order puts the dot
  // below first, a + dot below composes to U+1EA1, and the acute stays a separate mark.
  s.reset("a\xCC\x81\xCC\xA3", 0);
  s.nfc();
  EXPECT_EQ(s.text(), "\xE1\xBA\xA1\xCC\x81");  // U+1EA1 U+0301
}

TEST(NormalizedString, NfkdDecomposesCompatibilityCharacters) {
  NormalizedString s;
  s.reset("\xEF\xAC\x81", 0);  // U+FB01 "ﬁ"
  s.nfkd();
  EXPECT_EQ(s.text(), "fi");
  EXPECT_EQ(per_char(s), (Ranges{{0, 3}, {0, 3}}));
}

TEST(NormalizedString, FilterDropsCharacters) {
  NormalizedString s;
  s.reset("\x01" "ab\x02" "c", 0);
  s.filter([](char32_t c) { return c >= 0x20; });
  EXPECT_EQ(s.text(), "abc");
  EXPECT_EQ(per_char(s), (Ranges{{1, 2}, {2, 3}, {4, 5}}));
}

TEST(NormalizedString, StripBothSides) {
  NormalizedString s;
  s.reset("  ab \t", 0);
  s.strip(true, true);
  EXPECT_EQ(s.text(), "ab");
  EXPECT_EQ(per_char(s), (Ranges{{2, 3}, {3, 4}}));
  s.reset("   ", 0);
  s.strip(true, true);
  EXPECT_EQ(s.text(), "");
}

TEST(NormalizedString, PrependAttributesToTheFirstCharacter) {
  NormalizedString s;
  s.reset("ab", 5);
  s.prepend("\xE2\x96\x81");  // "▁"
  EXPECT_EQ(s.text(), "\xE2\x96\x81" "ab");
  EXPECT_EQ(per_char(s), (Ranges{{5, 6}, {5, 6}, {6, 7}}));
}

TEST(NormalizedString, InsertAtStartMapsToTheEmptyRangeAtShift) {
  NormalizedString s;
  s.reset("ab", 7);
  NormalizedString::Rewriter w(s);
  w.insert(U' ');
  w.keep();
  w.keep();
  w.finish();
  EXPECT_EQ(s.text(), " ab");
  EXPECT_EQ(per_char(s), (Ranges{{7, 7}, {7, 8}, {8, 9}}));
}

TEST(Unicode, FindsInvalidUtf8) {
  EXPECT_FALSE(unicode::find_invalid_utf8("plain ascii text, long enough for the fast path"));
  EXPECT_FALSE(unicode::find_invalid_utf8("\xC3\xA9\xE4\xB8\xAD\xF0\x9F\xA4\x97"));
  EXPECT_EQ(unicode::find_invalid_utf8("ab\xC3"), 2u);              // truncated
  EXPECT_EQ(unicode::find_invalid_utf8("\xC0\xAF"), 0u);            // overlong
  EXPECT_EQ(unicode::find_invalid_utf8("x\xED\xA0\x80"), 1u);       // surrogate
  EXPECT_EQ(unicode::find_invalid_utf8("\xF4\x90\x80\x80"), 0u);    // above U+10FFFF
  EXPECT_EQ(unicode::find_invalid_utf8("abcdefgh\x80"), 8u);        // stray continuation
}

TEST(Unicode, LegacyCategoriesFollowUnicode8) {
  EXPECT_TRUE(unicode::is_legacy_punctuation(0x2E42));
  EXPECT_FALSE(unicode::is_legacy_punctuation(0x2E43));  // added in Unicode 9
  EXPECT_TRUE(unicode::is_legacy_other(0x200B));
  EXPECT_TRUE(unicode::is_legacy_other(0xE001));         // private use, inside the range
  EXPECT_FALSE(unicode::is_legacy_other(0x13430));       // format, added in Unicode 12
  EXPECT_FALSE(unicode::is_legacy_other(0x0378));        // unassigned
  EXPECT_TRUE(unicode::is_legacy_nonspacing_mark(0x0301));
  EXPECT_FALSE(unicode::is_legacy_nonspacing_mark(0x1E944));  // Unicode 9
  EXPECT_TRUE(unicode::is_legacy_combining_mark(0x1E944));    // but in 9.0 for StripAccents
  EXPECT_FALSE(unicode::is_legacy_combining_mark(0x11D40));   // Unicode 10
}

TEST(Unicode, WhitespaceAndWords) {
  EXPECT_TRUE(unicode::is_whitespace(0x85));
  EXPECT_TRUE(unicode::is_whitespace(0x3000));
  EXPECT_FALSE(unicode::is_whitespace(0x200B));
  EXPECT_FALSE(unicode::is_whitespace(0x180E));
  EXPECT_TRUE(unicode::is_regex_word(0x24B6));  // Ⓐ, Other_Alphabetic
  EXPECT_TRUE(unicode::is_regex_word(0x200D));
  EXPECT_FALSE(unicode::is_regex_word(0xB2));   // ², No
  EXPECT_TRUE(unicode::is_regex_word(0x2167));  // Ⅷ, Nl
}

}  // namespace
}  // namespace il::text
