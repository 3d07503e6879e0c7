// UTF-8 and Unicode character properties as the Hugging Face tokenizers library sees them.
// Categories, case mappings and normalisation data come from utf8proc; the few places where the
// Rust library reads older Unicode tables (unicode_categories = Unicode 8.0,
// unicode-normalization-alignments = Unicode 9.0) exclude the characters added since, from
// generated tables (tools/tokenizer_oracle/gen_unicode_tables.sh).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace il::text::unicode {

// ---- UTF-8 ----

// Byte length of the UTF-8 sequence starting with lead byte b (1 for continuation bytes, so a
// caller walking valid text never stalls).
inline std::size_t utf8_length(unsigned char b) {
  if (b < 0xC0) return 1;
  if (b < 0xE0) return 2;
  if (b < 0xF0) return 3;
  return 4;
}

inline std::size_t utf8_length(char32_t c) {
  if (c < 0x80) return 1;
  if (c < 0x800) return 2;
  if (c < 0x10000) return 3;
  return 4;
}

// Decodes the code point at s[i] and advances i. The text must be valid UTF-8.
inline char32_t decode_utf8(std::string_view s, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  const std::size_t n = utf8_length(b0);
  char32_t c = b0 & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (std::size_t k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return c;
}

// Decodes the code point that ends just before s[end] (end > 0, valid UTF-8).
inline char32_t decode_utf8_before(std::string_view s, std::size_t end, std::size_t* begin) {
  std::size_t b = end - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  if (begin != nullptr) *begin = b;
  return decode_utf8(s, b);
}

void append_utf8(std::string& out, char32_t c);

// Offset of the first byte that is not valid UTF-8 (overlong forms, surrogates and values above
// U+10FFFF included), or std::nullopt when the whole text is valid.
std::optional<std::size_t> find_invalid_utf8(std::string_view s);

std::size_t count_chars(std::string_view s);

// ---- properties ----

// Rust char::is_whitespace: the White_Space property.
bool is_whitespace(char32_t c);
// Rust char::is_numeric: general category N*.
bool is_numeric(char32_t c);
// Rust char::is_ascii_punctuation.
inline bool is_ascii_punctuation(char32_t c) {
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
         (c >= 0x7B && c <= 0x7E);
}
// The regex crate's Unicode \w (Alphabetic, marks, decimal digits, connector punctuation,
// join controls): what the library's added-token `single_word` test looks at.
bool is_regex_word(char32_t c);
// Oniguruma's Unicode \w (letters, marks, numbers, connector punctuation): the Whitespace
// pre-tokenizer's regex `\w+|[^\w\s]+`.
bool is_onig_word(char32_t c);

// unicode_categories (Unicode 8.0) C*: control, format, private use, surrogate. Unassigned code
// points are not included, as in that crate.
bool is_legacy_other(char32_t c);
// unicode_categories (Unicode 8.0) P*.
bool is_legacy_punctuation(char32_t c);
// unicode_categories (Unicode 8.0) Mn.
bool is_legacy_nonspacing_mark(char32_t c);
// unicode-normalization-alignments (Unicode 9.0) is_combining_mark: M*.
bool is_legacy_combining_mark(char32_t c);
// BertPreTokenizer / Punctuation: ASCII punctuation or Unicode 8.0 punctuation.
inline bool is_bert_punctuation(char32_t c) {
  return is_ascii_punctuation(c) || (c >= 0x80 && is_legacy_punctuation(c));
}
// BertNormalizer's "Chinese character": the CJK Unified Ideographs blocks it lists.
bool is_chinese_char(char32_t c);

// ---- case and normalisation ----

// Rust char::to_lowercase (full mapping; only U+0130 maps to two characters). Writes up to 3
// code points to out and returns how many.
int to_lowercase(char32_t c, char32_t out[3]);

int combining_class(char32_t c);

// Full canonical (or compatibility) decomposition of c, Hangul included. Returns the number of
// code points written to out (at most cap; the longest decomposition is 18).
int decompose(char32_t c, bool compat, char32_t* out, int cap);

// Primary composite of the pair (a, b), Hangul LV/LVT included, or std::nullopt.
std::optional<char32_t> compose(char32_t a, char32_t b);

}  // namespace il::text::unicode
