#include "text/normalized_string.h"

#include <algorithm>
#include <optional>

#include "text/scratch.h"

namespace il::text {

using unicode::decode_utf8;

void NormalizedString::reset(std::string_view original, uint32_t shift) {
  text_.assign(original);
  shift_ = shift;
  align_.resize(original.size());
  std::size_t i = 0;
  while (i < original.size()) {
    const std::size_t n = unicode::utf8_length(static_cast<unsigned char>(original[i]));
    const Alignment a{static_cast<uint32_t>(shift + i), static_cast<uint32_t>(shift + i + n)};
    for (std::size_t k = 0; k < n; ++k) align_[i + k] = a;
    i += n;
  }
}

void NormalizedString::release_large() {
  release_if_large(text_);
  release_if_large(next_text_);
  release_if_large(align_);
  release_if_large(next_align_);
}

bool NormalizedString::is_ascii() const {
  for (char ch : text_) {
    if (static_cast<unsigned char>(ch) >= 0x80) return false;
  }
  return true;
}

// ---- Rewriter ----

NormalizedString::Rewriter::Rewriter(NormalizedString& s) : s_(s) {
  s_.next_text_.clear();
  s_.next_align_.clear();
  // Most rewrites keep about the length: room for a little more up front spares a large text
  // the slack of growing by doubling.
  s_.next_text_.reserve(s_.text_.size() + s_.text_.size() / 8);
  s_.next_align_.reserve(s_.align_.size() + s_.align_.size() / 8);
}

char32_t NormalizedString::Rewriter::peek() const {
  std::size_t i = pos_;
  return decode_utf8(s_.text_, i);
}

void NormalizedString::Rewriter::emit(char32_t c, Alignment a) {
  const std::size_t before = s_.next_text_.size();
  unicode::append_utf8(s_.next_text_, c);
  s_.next_align_.insert(s_.next_align_.end(), s_.next_text_.size() - before, a);
}

void NormalizedString::Rewriter::replace(char32_t c) {
  // Every byte of a character carries the same alignment, so the first one speaks for it.
  const Alignment a = s_.align_[pos_];
  pos_ += unicode::utf8_length(static_cast<unsigned char>(s_.text_[pos_]));
  emit(c, a);
}

void NormalizedString::Rewriter::insert(char32_t c) {
  const Alignment a = pos_ == 0 ? Alignment{s_.shift_, s_.shift_} : s_.align_[pos_ - 1];
  emit(c, a);
}

void NormalizedString::Rewriter::skip(std::size_t n_chars) {
  for (std::size_t k = 0; k < n_chars && pos_ < s_.text_.size(); ++k) {
    pos_ += unicode::utf8_length(static_cast<unsigned char>(s_.text_[pos_]));
  }
}

void NormalizedString::Rewriter::keep() {
  const std::size_t n = unicode::utf8_length(static_cast<unsigned char>(s_.text_[pos_]));
  s_.next_text_.append(s_.text_, pos_, n);
  s_.next_align_.insert(s_.next_align_.end(), s_.align_.begin() + static_cast<std::ptrdiff_t>(pos_),
                        s_.align_.begin() + static_cast<std::ptrdiff_t>(pos_ + n));
  pos_ += n;
}

void NormalizedString::Rewriter::finish() {
  s_.text_.swap(s_.next_text_);
  s_.align_.swap(s_.next_align_);
  // The old text is not read again: a large one is not kept next to the new.
  release_if_large(s_.next_text_);
  release_if_large(s_.next_align_);
}

// ---- operations ----

void NormalizedString::lowercase() {
  if (is_ascii()) {
    for (char& ch : text_) {
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch + 32);
    }
    return;
  }
  char32_t low[3];
  std::string_view t = text_;
  std::size_t i = 0;
  bool in_place = true;
  while (i < t.size() && in_place) {
    const std::size_t at = i;
    const char32_t c = decode_utf8(t, i);
    in_place = unicode::to_lowercase(c, low) == 1 && unicode::utf8_length(low[0]) == i - at;
  }
  if (in_place) {
    map([&](char32_t c) {
      unicode::to_lowercase(c, low);
      return low[0];
    });
    return;
  }
  Rewriter w(*this);
  while (!w.at_end()) {
    const int n = unicode::to_lowercase(w.peek(), low);
    w.replace(low[0]);
    for (int k = 1; k < n; ++k) w.insert(low[k]);
  }
  w.finish();
}

namespace {

// A character of a normalisation stream with the library's change marker: 0 stands for a source
// character, 1 is an extra character, -n stands for a source character plus n removed ones.
struct Changed {
  char32_t c;
  int change;
};

// The canonical decomposition stream, with the library's change markers: the first character of
// each decomposition stands for the source character, the others are extra; combining marks are
// put in canonical order between starters (stably, markers travelling with their characters).
// Handed to emit(const Changed&) as it goes: only the characters since the last starter wait.
template <typename Emit>
void decompose_stream(std::string_view text, bool compat, Emit&& emit) {
  thread_local std::vector<Changed> pending;  // the last starter and the marks after it
  pending.clear();
  auto flush = [&] {
    // The starter sorts first (class 0, and the sort is stable).
    std::stable_sort(pending.begin(), pending.end(), [](const Changed& a, const Changed& b) {
      return unicode::combining_class(a.c) < unicode::combining_class(b.c);
    });
    for (const Changed& x : pending) emit(x);
    pending.clear();
  };
  char32_t parts[32];
  std::size_t i = 0;
  while (i < text.size()) {
    const char32_t c = decode_utf8(text, i);
    const int n = c < 0xA0 ? (parts[0] = c, 1) : unicode::decompose(c, compat, parts, 32);
    for (int k = 0; k < n; ++k) {
      if (unicode::combining_class(parts[k]) == 0) flush();
      pending.push_back({parts[k], k == 0 ? 0 : 1});
    }
  }
  flush();
  release_if_large(pending);
}

void apply(NormalizedString::Rewriter& w, const Changed& x) {
  if (x.change > 0) {
    w.insert(x.c);
    return;
  }
  w.replace(x.c);
  if (x.change < 0) w.skip(static_cast<std::size_t>(-x.change));
}

}  // namespace

void NormalizedString::decompose(bool compat) {
  if (is_ascii()) return;
  Rewriter w(*this);
  decompose_stream(text_, compat, [&w](const Changed& x) { apply(w, x); });
  w.finish();
}

void NormalizedString::recompose(bool compat) {
  if (is_ascii()) return;
  thread_local std::vector<Changed> blocked;
  blocked.clear();
  Rewriter w(*this);
  // Canonical composition as the library's iterator runs it: a starter collects the following
  // marks it composes with (two merged characters stand for their sources minus one); marks that
  // do not compose wait in `blocked` and follow the starter.
  std::optional<Changed> composee;
  int last_ccc = -1;  // -1: no blocked mark since the composee
  auto flush = [&] {
    if (composee) apply(w, *composee);
    for (const Changed& b : blocked) apply(w, b);
    blocked.clear();
    composee.reset();
    last_ccc = -1;
  };
  decompose_stream(text_, compat, [&](const Changed& x) {
    const int ccc = unicode::combining_class(x.c);
    if (!composee) {
      if (ccc != 0) {
        apply(w, x);
      } else {
        composee = x;
      }
      return;
    }
    if (last_ccc >= 0 && last_ccc >= ccc) {
      // x is blocked from the composee.
      if (ccc == 0) {
        flush();
        composee = x;
      } else {
        blocked.push_back(x);
        last_ccc = ccc;
      }
      return;
    }
    if (const auto r = unicode::compose(composee->c, x.c)) {
      composee = Changed{*r, composee->change + x.change - 1};
      return;
    }
    if (ccc == 0) {
      flush();
      composee = x;
    } else {
      blocked.push_back(x);
      last_ccc = ccc;
    }
  });
  flush();
  w.finish();
  release_if_large(blocked);
}

void NormalizedString::strip(bool left, bool right) {
  std::string_view t = text_;
  std::size_t leading = 0;
  std::size_t total = 0;
  std::size_t trailing = 0;
  std::size_t i = 0;
  bool in_leading = left;
  while (i < t.size()) {
    const bool space = unicode::is_whitespace(decode_utf8(t, i));
    ++total;
    if (in_leading && space) {
      ++leading;
    } else {
      in_leading = false;
    }
    trailing = space ? trailing + 1 : 0;
  }
  if (!right) trailing = 0;
  if (leading == 0 && trailing == 0) return;
  Rewriter w(*this);
  w.skip(leading);
  for (std::size_t k = leading; k + trailing < total; ++k) w.keep();
  w.finish();
}

void NormalizedString::prepend(std::string_view s) {
  if (text_.empty() || s.empty()) return;
  // The prepended characters take the place of the first character, which is re-inserted after
  // them: all of them are attributed to it.
  Rewriter w(*this);
  const char32_t first = w.peek();
  std::size_t i = 0;
  w.replace(decode_utf8(s, i));
  while (i < s.size()) w.insert(decode_utf8(s, i));
  w.insert(first);
  while (!w.at_end()) w.keep();
  w.finish();
}

}  // namespace il::text
