// Regex patterns (PCRE2 made to behave like the library's Oniguruma), the Split and ByteLevel
// pre-tokenizers, the Replace normalizer and the byte-level BPE family's decoders.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "test_tokenizers.h"
#include "text/byte_level.h"
#include "text/regex.h"

namespace il::text {
namespace {

using testing::json;
using Strings = std::vector<std::string>;
using Offsets = std::vector<std::pair<uint32_t, uint32_t>>;

std::vector<PatternPiece> pieces(const Regex& re, std::string_view text) {
  std::vector<PatternPiece> out;
  re.find_matches(text, out);
  return out;
}

std::string matched(const Regex& re, std::string_view text) {
  std::string out;
  for (const PatternPiece& p : pieces(re, text)) {
    if (p.is_match) out += "[" + std::string(text.substr(p.begin, p.end - p.begin)) + "]";
  }
  return out;
}

TEST(Regex, SpacesAreOnigurumasWhiteSpace) {
  const Regex re("\\s", false);
  // U+180E is a space to PCRE2's \s but not to Oniguruma's; NEL and NBSP are to both.
  EXPECT_EQ(matched(re, "a\u180Eb\u0085c\u00A0d\u3000"), "[\u0085][\u00A0][\u3000]");
  EXPECT_EQ(matched(Regex("[^\\s]+", false), "a\u180Eb c"), "[a\u180Eb][c]");
  EXPECT_EQ(matched(Regex("\\S+", false), "a\u180Eb c"), "[a\u180Eb][c]");
  EXPECT_EQ(matched(Regex("\\w+", false), "e\u0301t\u00e9 x_1"), "[e\u0301t\u00e9][x_1]");
  EXPECT_EQ(oniguruma_to_pcre2("a\\\\s[\\s\\d]"),
            "a\\\\s[\\x{9}-\\x{d}\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}"
            "\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\d]");
}

TEST(Regex, EmptyMatchesFollowOnigurumasIterator) {
  // An empty match right where the previous match ended is skipped.
  const auto p = pieces(Regex("x*", false), "abxxc");
  const std::vector<std::tuple<uint32_t, uint32_t, bool>> want = {
      {0, 0, true}, {0, 1, false}, {1, 1, true}, {1, 2, false},
      {2, 4, true}, {4, 5, false}, {5, 5, true}};
  ASSERT_EQ(p.size(), want.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(std::make_tuple(p[i].begin, p[i].end, p[i].is_match), want[i]) << i;
  }
  // Empty text: one empty non-match.
  const auto e = pieces(Regex("x*", false), "");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_FALSE(e[0].is_match);
}

TEST(Regex, LiteralsLineAnchorsAndCase) {
  EXPECT_EQ(matched(Regex("a.b", true), "axb a.b"), "[a.b]");
  EXPECT_EQ(matched(Regex("", true), "ab"), "[][][]");  // an empty match at every position
  // Ruby syntax: ^ and $ at every line, lines end at "\n" only.
  EXPECT_EQ(matched(Regex("^a|b$", false), "ab\nab\r\nab"), "[a][b][a][a][b]");
  EXPECT_EQ(matched(Regex("(?i:'s|'ll)", false), "it'S we'LL x'\u017F"), "['S]['LL]['\u017F]");
  EXPECT_EQ(matched(Regex("\\p{N}{1,3}", false), "12345 \u0663\u0664"),
            "[123][45][\u0663\u0664]");
}

TEST(Regex, InvalidPatternsAreRefused) {
  EXPECT_THROW(Regex("(unclosed", false), il::Error);
  EXPECT_THROW(Regex("a{2,1}", false), il::Error);
  EXPECT_THROW(Regex("\xff", false), il::Error);
  EXPECT_NO_THROW(Regex("(unclosed", true));
}

// ---- pre-tokenizers and normalizers, seen through a BPE that keeps every split whole ----

// Every substring of the texts as a vocabulary token: with ignore_merges, each split the
// pre-tokenizer makes (and the model is given) comes back as one token.
json substring_vocab(const Strings& texts) {
  json vocab = json::object();
  int id = 0;
  for (const std::string& t : texts) {
    std::vector<std::size_t> starts;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if ((static_cast<unsigned char>(t[i]) & 0xC0) != 0x80) starts.push_back(i);
    }
    starts.push_back(t.size());
    for (std::size_t a = 0; a + 1 < starts.size(); ++a) {
      for (std::size_t b = a + 1; b < starts.size(); ++b) {
        const std::string s = t.substr(starts[a], starts[b] - starts[a]);
        if (!vocab.contains(s)) vocab[s] = id++;
      }
    }
  }
  return vocab;
}

// The byte-level form of `text`.
std::string byte_level_form(std::string_view text) {
  std::string out;
  for (const char c : text) out += byte_level::char_of_byte(static_cast<uint8_t>(c));
  return out;
}

json whole_split_doc(const json& normalizer, const json& pre_tokenizer, const Strings& texts) {
  return {{"version", "1.0"},
          {"added_tokens", json::array()},
          {"normalizer", normalizer},
          {"pre_tokenizer", pre_tokenizer},
          {"model",
           {{"type", "BPE"},
            {"ignore_merges", true},
            {"vocab", substring_vocab(texts)},
            {"merges", json::array()}}}};
}

struct Splits {
  Strings text;
  Offsets offsets;
};

Splits splits(const json& doc, std::string_view text) {
  const auto t = testing::load(doc);
  const Encoding e = t.encode(text);
  Splits out;
  for (const int32_t id : e.ids) out.text.push_back(t.id_to_token(id).value_or("?"));
  out.offsets = e.offsets;
  return out;
}

json split(const json& pattern, const char* behavior, bool invert = false) {
  return {{"type", "Split"}, {"pattern", pattern}, {"behavior", behavior}, {"invert", invert}};
}

TEST(SplitPreTokenizer, EveryBehaviour) {
  const std::string text = "the-final--countdown";
  auto with = [&](const char* behavior) {
    return splits(whole_split_doc(nullptr, split({{"String", "-"}}, behavior), {text}), text).text;
  };
  EXPECT_EQ(with("Removed"), (Strings{"the", "final", "countdown"}));
  EXPECT_EQ(with("Isolated"), (Strings{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(with("MergedWithPrevious"), (Strings{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(with("MergedWithNext"), (Strings{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(with("Contiguous"), (Strings{"the", "-", "final", "--", "countdown"}));
}

TEST(SplitPreTokenizer, InvertMakesTheTextBetweenMatchesTheDelimiter) {
  const std::string text = "How are you?";
  const Splits r =
      splits(whole_split_doc(nullptr, split({{"Regex", "\\w+"}}, "Removed", true), {text}), text);
  EXPECT_EQ(r.text, (Strings{"How", "are", "you"}));
  EXPECT_EQ(r.offsets, (Offsets{{0, 3}, {4, 7}, {8, 11}}));
}

TEST(SplitPreTokenizer, BadPatternsNameTheField) {
  auto error = [](const json& pre) {
    try {
      testing::load(whole_split_doc(nullptr, pre, {"x"}));
    } catch (const il::Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error(split({{"Regex", "(a"}}, "Isolated"))
                .find("tokenizer.json: pre_tokenizer.pattern.Regex is not a valid regular "
                      "expression"),
            std::string::npos)
      << error(split({{"Regex", "(a"}}, "Isolated"));
  EXPECT_NE(error(split({{"Glob", "*"}}, "Isolated")).find("pre_tokenizer.pattern must be"),
            std::string::npos);
  EXPECT_NE(error(split({{"String", "-"}}, "Sideways"))
                .find("pre_tokenizer.behavior \"Sideways\" is not supported"),
            std::string::npos);
  json no_invert = split({{"String", "-"}}, "Isolated");
  no_invert.erase("invert");
  EXPECT_NE(error(no_invert).find("pre_tokenizer.invert is missing"), std::string::npos);
}

TEST(ReplaceNormalizer, ReplacementMapsToTheLastCharacterOfTheMatch) {
  // Measured with the library: the '"' standing for "''" at bytes 10-12 maps to 11-12.
  const std::string text = "This is a ''test''";
  const json normalizer = {{"type", "Replace"}, {"pattern", {{"String", "''"}}}, {"content", "\""}};
  const Splits r = splits(
      whole_split_doc(normalizer, split({{"String", "\""}}, "Isolated"), {"This is a \"test\""}),
      text);
  EXPECT_EQ(r.text, (Strings{"This is a ", "\"", "test", "\""}));
  EXPECT_EQ(r.offsets, (Offsets{{0, 10}, {11, 12}, {12, 16}, {17, 18}}));
}

TEST(ReplaceNormalizer, RegexPatternsAndDeletions) {
  const json collapse = {{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}};
  Splits r = splits(whole_split_doc(collapse, nullptr, {"a b c"}), "a \t b\n\nc");
  EXPECT_EQ(r.text, (Strings{"a b c"}));
  EXPECT_EQ(r.offsets, (Offsets{{0, 8}}));
  const json drop = {{"type", "Replace"}, {"pattern", {{"Regex", "\\p{Mn}"}}}, {"content", ""}};
  r = splits(whole_split_doc(drop, nullptr, {"cafe"}), "cafe\u0301");
  EXPECT_EQ(r.text, (Strings{"cafe"}));
  EXPECT_EQ(r.offsets, (Offsets{{0, 4}}));  // the removed mark leaves the token
}

TEST(ByteLevelPreTokenizer, SplitsLikeGpt2AndMapsBytes) {
  const json pre = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  const std::string text = "i\u2B62j Hello";
  const Splits r = splits(whole_split_doc(nullptr, pre, {byte_level_form(text)}), text);
  EXPECT_EQ(r.text, (Strings{"i", byte_level_form("\u2B62"), "j", byte_level_form(" Hello")}));
  // The three characters standing for the bytes of U+2B62 all map back to it.
  EXPECT_EQ(r.offsets, (Offsets{{0, 1}, {1, 4}, {4, 5}, {5, 11}}));
}

TEST(ByteLevelPreTokenizer, PrefixSpaceTakesTheFirstCharactersPlace) {
  const json pre = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", false}};
  const Splits r = splits(whole_split_doc(nullptr, pre, {byte_level_form(" hi there")}),
                          "hi there");
  EXPECT_EQ(r.text, (Strings{byte_level_form(" hi there")}));
  EXPECT_EQ(r.offsets, (Offsets{{0, 8}}));
  // No second space when the text starts with one.
  EXPECT_EQ(splits(whole_split_doc(nullptr, pre, {byte_level_form(" hi")}), " hi").text,
            (Strings{byte_level_form(" hi")}));
}

// ---- decoders ----

std::string decode(const json& decoder, const Strings& tokens) {
  json vocab = json::object();
  std::vector<int32_t> ids;
  for (const std::string& t : tokens) {
    if (!vocab.contains(t)) vocab[t] = static_cast<int>(vocab.size());
    ids.push_back(vocab[t].get<int32_t>());
  }
  const json doc = {{"version", "1.0"},
                    {"decoder", decoder},
                    {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}}};
  return testing::load(doc).decode(ids);
}

TEST(Decoders, ByteFallbackJoinsValidRunsAndReplacesInvalidBytes) {
  const json d = {{"type", "ByteFallback"}};
  EXPECT_EQ(decode(d, {"<0xE5>", "<0x8f>", "<0xAB>", "a"}), "\u53EBa");
  EXPECT_EQ(decode(d, {"<0xE5>", "<0x8F>", "a"}), "\uFFFD\uFFFDa");
  EXPECT_EQ(decode(d, {"<0x61>", "<0xZZ>", "<0x62>"}), "a<0xZZ>b");
}

TEST(Decoders, ByteLevelBackToBytesWithLossyUtf8) {
  const json d = {{"type", "ByteLevel"}};
  EXPECT_EQ(decode(d, {"Hello", byte_level_form(" my")}), "Hello my");
  // A character split between tokens comes back whole.
  const std::string e = byte_level_form("\u00e9");
  EXPECT_EQ(decode(d, {e.substr(0, 2), e.substr(2)}), "\u00e9");
  // E5 8F is the start of a three-byte character: one U+FFFD for the two bytes.
  EXPECT_EQ(decode(d, {byte_level_form("\xE5\x8F"), "a"}), "\uFFFDa");
  EXPECT_EQ(decode(d, {byte_level_form("\xFF\xC0"), "b"}), "\uFFFD\uFFFDb");
  // A token with a character outside the alphabet keeps its own UTF-8.
  EXPECT_EQ(decode(d, {"\u20AC", "a"}), "\u20ACa");
}

TEST(Decoders, StripFuseReplaceAndBpeDecoder) {
  const json strip = {{"type", "Strip"}, {"content", "H"}, {"start", 1}, {"stop", 0}};
  EXPECT_EQ(decode(strip, {"Hey", " friend!", "HHH"}), "ey friend!HH");
  const json strip_end = {{"type", "Strip"}, {"content", "y"}, {"start", 0}, {"stop", 1}};
  EXPECT_EQ(decode(strip_end, {"Hey", " friend!"}), "He friend!");
  const json replace = {{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}};
  const json strip_start = {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}};
  const json llama = {
      {"type", "Sequence"},
      {"decoders", {replace, {{"type", "ByteFallback"}}, {{"type", "Fuse"}}, strip_start}}};
  EXPECT_EQ(decode(llama, {"\u2581Hello", "\u2581w", "<0xC3>", "<0xB6>", "rld"}),
            "Hello w\u00f6rld");
  const json bpe = {{"type", "BPEDecoder"}, {"suffix", "</w>"}};
  EXPECT_EQ(decode(bpe, {"hel", "lo</w>", "x</w>"}), "hello x");
  const json regex = {{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", "_"}};
  EXPECT_EQ(decode(regex, {"a  b", "c\t"}), "a_bc_");
}

TEST(Decoders, BpeDecoderWithAnEmptySuffixEnds) {
  // Rust's str::replace with an empty pattern matches at every character boundary: the tokens
  // but the last get a space around each character, the last stays as it is. The replacement
  // loop used to insert forever here.
  const json bpe = {{"type", "BPEDecoder"}, {"suffix", ""}};
  EXPECT_EQ(decode(bpe, {"ab", "\u00e9", "cd"}), " a b  \u00e9 cd");
}

TEST(Decoders, StripContentMustBeOneCharacter) {
  const json doc = {{"version", "1.0"},
                    {"decoder", {{"type", "Strip"}, {"content", "ab"}, {"start", 1}, {"stop", 0}}},
                    {"model", {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", json::array()}}}};
  try {
    testing::load(doc);
    ADD_FAILURE() << "no error";
  } catch (const il::Error& e) {
    EXPECT_NE(std::string(e.what()).find("decoder.content must be a single character"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace il::text
