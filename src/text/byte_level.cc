#include "text/byte_level.h"

#include <array>

#include "text/unicode.h"

namespace il::text::byte_level {
namespace {

struct Alphabet {
  std::array<std::string, 256> utf8;  // byte -> its character, as UTF-8
  std::array<int16_t, 0x144> byte;    // character -> byte (the alphabet ends below U+0144)

  Alphabet() {
    byte.fill(-1);
    // Bytes that are printable Latin-1 stand for themselves; the rest take U+0100, U+0101, ...
    // in byte order.
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const char32_t c = printable(b) ? static_cast<char32_t>(b) : next++;
      unicode::append_utf8(utf8[b], c);
      byte[c] = static_cast<int16_t>(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

// A space before every split that does not start with one; it takes the place of the split's
// first character (the library's NormalizedString::prepend).
class PrefixSpace final : public SplitRewrite {
 public:
  void rewrite(std::string_view text, std::span<const Alignment> align, std::string& out,
               std::vector<Alignment>& out_align) const override {
    if (text.front() != ' ') {
      out += ' ';
      out_align.push_back(align.front());
    }
    out += text;
    out_align.insert(out_align.end(), align.begin(), align.end());
  }
};

// The GPT-2 split (use_regex), its matches isolated.
class Gpt2Cut final : public SplitCut {
 public:
  void cut(std::string_view text, std::vector<Range>& out) const override {
    PieceFolder fold(SplitBehavior::kIsolated, out);
    gpt2_split_regex().find_matches(text, fold);
    fold.finish();
  }
};

// Every byte becomes its alphabet character, aligned with the source character it is part of.
class ToAlphabet final : public SplitRewrite {
 public:
  void rewrite(std::string_view text, std::span<const Alignment> align, std::string& out,
               std::vector<Alignment>& out_align) const override {
    const Alphabet& a = alphabet();
    for (std::size_t i = 0; i < text.size(); ++i) {
      const std::string& c = a.utf8[static_cast<unsigned char>(text[i])];
      out += c;
      out_align.insert(out_align.end(), c.size(), align[i]);
    }
  }
};

}  // namespace

std::string_view char_of_byte(uint8_t b) { return alphabet().utf8[b]; }

int byte_of_char(char32_t c) {
  const auto& a = alphabet();
  return c < a.byte.size() ? a.byte[c] : -1;
}

const Regex& gpt2_split_regex() {
  static const Regex re(
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", false);
  return re;
}

void append_utf8_lossy(std::string& out, std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
      out += static_cast<char>(b0);
      ++i;
      continue;
    }
    // Expected length and the range of the second byte (which rules out overlong forms,
    // surrogates and values above U+10FFFF); later bytes are plain continuations.
    std::size_t len = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      len = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      len = 3;
      if (b0 == 0xE0) lo = 0xA0;
      if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      len = 4;
      if (b0 == 0xF0) lo = 0x90;
      if (b0 == 0xF4) hi = 0x8F;
    }
    std::size_t k = 1;
    while (len > 0 && k < len && i + k < s.size()) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      const bool ok = k == 1 ? b >= lo && b <= hi : b >= 0x80 && b <= 0xBF;
      if (!ok) break;
      ++k;
    }
    if (len > 0 && k == len) {
      out.append(s, i, len);
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD for the maximal invalid prefix (at least one byte)
    }
    i += k;
  }
}

void add_pre_tokenizer_steps(const JsonRef& j, PreTokenizer& out) {
  const bool add_prefix_space = j.get_bool("add_prefix_space", true);
  const bool use_regex = j.get_bool("use_regex", true);
  j.get_bool("trim_offsets", true);  // type-checked; used by the post-processor only
  if (add_prefix_space) out.add(std::make_unique<PrefixSpace>());
  if (use_regex) out.add(std::make_unique<Gpt2Cut>());
  out.add(std::make_unique<ToAlphabet>());
}

}  // namespace il::text::byte_level
