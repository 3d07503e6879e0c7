// A piece of input text being normalised, with the alignment the tokenizers library keeps: every
// byte of the normalised text maps to the byte range of the original text it came from. Token
// offsets are read back through these alignments, so every rewrite below reproduces the
// library's bookkeeping exactly (which original character an inserted or replaced character is
// attributed to), not just the normalised text.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/scratch.h"
#include "text/unicode.h"

namespace il::text {

// Byte range [begin, end) of the whole original sequence text.
struct Alignment {
  uint32_t begin = 0;
  uint32_t end = 0;
  bool operator==(const Alignment&) const = default;
};

class NormalizedString {
 public:
  // Starts with normalised == original: `original` is the part of the sequence text that begins
  // at byte `shift` of it. Reuses the buffers, so a thread-local instance does not allocate once
  // warm.
  void reset(std::string_view original, uint32_t shift);

  const std::string& text() const { return text_; }
  std::span<const Alignment> alignments() const { return align_; }
  // Where this piece starts in the sequence text; characters inserted before any other character
  // are attributed to the empty range there.
  uint32_t shift() const { return shift_; }

  // Builds the next normalised text character by character, like the library's transform():
  // replace(c) emits c for the next source character (keeping its alignment), insert(c) emits a
  // new character attributed to the source character before the current position, skip(n) drops
  // the next n source characters, keep() copies the next source character unchanged. Source
  // characters not consumed by finish() are dropped.
  class Rewriter {
   public:
    explicit Rewriter(NormalizedString& s);
    void replace(char32_t c);
    void insert(char32_t c);
    void skip(std::size_t n_chars = 1);
    void keep();
    bool at_end() const { return pos_ >= s_.text_.size(); }
    // The next source character (the rewriter must not be at its end).
    char32_t peek() const;
    void finish();

   private:
    void emit(char32_t c, Alignment a);
    NormalizedString& s_;
    std::size_t pos_ = 0;
  };

  // Keeps the characters for which keep(c) is true (the library's filter()).
  template <typename Keep>
  void filter(Keep keep);
  // Replaces every character by map(c) (the library's map()).
  template <typename Map>
  void map(Map map);

  void lowercase();
  void nfd() { decompose(false); }
  void nfkd() { decompose(true); }
  void nfc() { recompose(false); }
  void nfkc() { recompose(true); }
  void strip(bool left, bool right);
  void prepend(std::string_view s);

  // Frees the buffers a large text grew (see text/scratch.h).
  void release_large();

 private:
  void decompose(bool compat);
  void recompose(bool compat);
  bool is_ascii() const;

  std::string text_, next_text_;
  std::vector<Alignment> align_, next_align_;
  uint32_t shift_ = 0;
};

template <typename Keep>
void NormalizedString::filter(Keep keep) {
  // First pass without writing: most text loses nothing.
  std::size_t i = 0;
  std::string_view t = text_;
  while (i < t.size()) {
    const std::size_t at = i;
    if (!keep(unicode::decode_utf8(t, i))) {
      i = at;
      break;
    }
  }
  if (i >= t.size()) return;
  Rewriter w(*this);
  while (!w.at_end()) {
    if (keep(w.peek())) {
      w.keep();
    } else {
      w.skip();
    }
  }
  w.finish();
}

template <typename Map>
void NormalizedString::map(Map map) {
  // In place while every replacement has the byte length of the character it replaces: the
  // alignments do not change then.
  std::string_view t = text_;
  std::size_t i = 0;
  bool same_length = true;
  bool changed = false;
  while (i < t.size()) {
    const std::size_t at = i;
    const char32_t c = unicode::decode_utf8(t, i);
    const char32_t m = map(c);
    if (m != c) {
      changed = true;
      if (unicode::utf8_length(m) != i - at) {
        same_length = false;
        break;
      }
    }
  }
  if (!changed) return;
  if (same_length) {
    next_text_.clear();
    i = 0;
    while (i < t.size()) unicode::append_utf8(next_text_, map(unicode::decode_utf8(t, i)));
    text_.swap(next_text_);
    release_if_large(next_text_);
    return;
  }
  Rewriter w(*this);
  while (!w.at_end()) w.replace(map(w.peek()));
  w.finish();
}

}  // namespace il::text
