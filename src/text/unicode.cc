#include "text/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <iterator>

namespace il::text::unicode {
namespace {

struct Range {
  char32_t first;
  char32_t last;
};

// Cc/Cf/Co/Mn/P* code points assigned after Unicode 8.0.
constexpr Range kAfterUnicode8[] = {
#include "text/unicode8_additions.inc"
};
// Mn/Mc/Me code points assigned after Unicode 9.0.
constexpr Range kMarksAfterUnicode9[] = {
#include "text/unicode9_mark_additions.inc"
};

template <std::size_t N>
bool in_ranges(const Range (&ranges)[N], char32_t c) {
  auto it = std::upper_bound(std::begin(ranges), std::end(ranges), c,
                             [](char32_t v, const Range& r) { return v < r.first; });
  return it != std::begin(ranges) && c <= std::prev(it)->last;
}

utf8proc_category_t category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

bool is_mark_category(utf8proc_category_t k) {
  return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_MC || k == UTF8PROC_CATEGORY_ME;
}

bool is_letter_category(utf8proc_category_t k) {
  return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO;
}

// Alphabetic = letters, letter numbers and Other_Alphabetic; Other_Alphabetic outside the mark
// categories is only these circled / squared letters (So).
bool is_alphabetic_symbol(char32_t c) {
  return (c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) ||
         (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189);
}

}  // namespace

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::optional<std::size_t> find_invalid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    // ASCII runs are the common case: test 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w = 0;
      for (int k = 0; k < 8; ++k) w |= static_cast<uint64_t>(p[i + k]) << (8 * k);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    const unsigned char b = p[i];
    if (b < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (b >= 0xC2 && b <= 0xDF) {
      len = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3;
      if (b == 0xE0) lo = 0xA0;  // overlong
      if (b == 0xED) hi = 0x9F;  // surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4;
      if (b == 0xF0) lo = 0x90;  // overlong
      if (b == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      return i;
    }
    if (i + len > n || p[i + 1] < lo || p[i + 1] > hi) return i;
    for (std::size_t k = 2; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
    }
    i += len;
  }
  return std::nullopt;
}

std::size_t count_chars(std::string_view s) {
  std::size_t n = 0;
  for (char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  return n;
}

bool is_whitespace(char32_t c) {
  if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || c == 0x20;
  if (c == 0x85) return true;
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_ZS || k == UTF8PROC_CATEGORY_ZL || k == UTF8PROC_CATEGORY_ZP;
}

bool is_numeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

bool is_regex_word(char32_t c) {
  if (c < 0x80) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }
  if (c == 0x200C || c == 0x200D) return true;  // Join_Control
  const auto k = category(c);
  return is_letter_category(k) || is_mark_category(k) || k == UTF8PROC_CATEGORY_ND ||
         k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_PC || is_alphabetic_symbol(c);
}

bool is_onig_word(char32_t c) { return is_regex_word(c); }

bool is_legacy_other(char32_t c) {
  const auto k = category(c);
  const bool other = k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF ||
                     k == UTF8PROC_CATEGORY_CO || k == UTF8PROC_CATEGORY_CS;
  return other && !in_ranges(kAfterUnicode8, c);
}

bool is_legacy_punctuation(char32_t c) {
  const auto k = category(c);
  return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO && !in_ranges(kAfterUnicode8, c);
}

bool is_legacy_nonspacing_mark(char32_t c) {
  return category(c) == UTF8PROC_CATEGORY_MN && !in_ranges(kAfterUnicode8, c);
}

bool is_legacy_combining_mark(char32_t c) {
  return is_mark_category(category(c)) && !in_ranges(kMarksAfterUnicode9, c);
}

bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

int to_lowercase(char32_t c, char32_t out[3]) {
  if (c < 0x80) {
    out[0] = (c >= 'A' && c <= 'Z') ? c + 32 : c;
    return 1;
  }
  // The one unconditional SpecialCasing.txt lowercase mapping that is not a single code point.
  if (c == 0x130) {
    out[0] = 0x69;
    out[1] = 0x307;
    return 2;
  }
  out[0] = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
  return 1;
}

int combining_class(char32_t c) {
  if (c < 0x300) return 0;
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->combining_class;
}

int decompose(char32_t c, bool compat, char32_t* out, int cap) {
  utf8proc_int32_t buf[32];
  int boundclass = UTF8PROC_BOUNDCLASS_START;
  const int options = UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0);
  const utf8proc_ssize_t n = utf8proc_decompose_char(
      static_cast<utf8proc_int32_t>(c), buf, 32, static_cast<utf8proc_option_t>(options),
      &boundclass);
  if (n <= 0 || n > cap || n > 32) {
    out[0] = c;
    return 1;
  }
  for (utf8proc_ssize_t k = 0; k < n; ++k) out[k] = static_cast<char32_t>(buf[k]);
  return static_cast<int>(n);
}

std::optional<char32_t> compose(char32_t a, char32_t b) {
  // utf8proc has no pair API; composing a two-character buffer gives the same answer.
  utf8proc_int32_t buf[2] = {static_cast<utf8proc_int32_t>(a), static_cast<utf8proc_int32_t>(b)};
  const auto n = utf8proc_normalize_utf32(
      buf, 2, static_cast<utf8proc_option_t>(UTF8PROC_COMPOSE | UTF8PROC_STABLE));
  if (n == 1) return static_cast<char32_t>(buf[0]);
  return std::nullopt;
}

}  // namespace il::text::unicode
