// One input sequence between normalisation and the model: the normalised text of all its pieces in
// one buffer (with per-byte alignments into the sequence text) and the list of splits the
// pre-tokenizers have cut it into. Splitting only rewrites the (small) split list, never the text,
// so pre-tokenizing a sequence costs no allocation once the thread-local buffers are warm.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/normalized_string.h"
#include "text/regex.h"

namespace il::text {

// How a pre-tokenizer treats the characters it splits on (the library's
// SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

class PreTokenizedString {
 public:
  struct Split {
    uint32_t begin = 0;  // byte range of the split in text()
    uint32_t end = 0;
    uint32_t shift = 0;     // sequence-text offset a character inserted at its start maps to
    int32_t token_id = -1;  // >= 0: an added token, already final
  };

  void clear();
  // Appends a normalised piece as one split (dropped when empty, as the library drops empty
  // splits); token_id >= 0 marks an added token.
  void append(const NormalizedString& piece, std::size_t begin, std::size_t end,
              int32_t token_id);

  const std::string& text() const { return text_; }
  std::span<const Alignment> alignments() const { return align_; }
  std::span<const Split> splits() const { return splits_; }
  std::string_view text(const Split& s) const {
    return std::string_view(text_).substr(s.begin, s.end - s.begin);
  }
  // Sequence-text byte range of the normalised bytes [begin, end) (end > begin), as the library
  // converts token offsets: from the start of the first byte's source to the end of the last's.
  Alignment original_range(std::size_t begin, std::size_t end) const {
    return {align_[begin].begin, align_[end - 1].end};
  }

  // Splits every split that is not an added token at the characters where is_delimiter(c) is
  // true, treating them as `behavior` says. Empty results are dropped.
  template <typename Pred>
  void split_on_chars(Pred is_delimiter, SplitBehavior behavior);

  // Replaces every split that is not an added token by the ranges (relative to the split) that
  // cut(text, ranges) appends to `ranges`; the ranges must be in order and inside the split.
  template <typename Cut>
  void split_with(Cut cut);

  // Splits every split that is not an added token by the pieces find(text, pieces) appends to a
  // std::vector<PatternPiece> (consecutive ranges covering the split's text, matches flagged),
  // treating the matches as `behavior` says (the library's NormalizedString::split).
  template <typename Find>
  void split_on_pattern(Find find, SplitBehavior behavior);

  // Rewrites the text of every split that is not an added token (the library's
  // PreTokenizedString::normalize): rewrite(text, alignments, out_text, out_alignments) appends
  // the split's new text and one alignment per new byte. Splits left empty are dropped.
  template <typename Rewrite>
  void rewrite(Rewrite rewrite);

 private:
  struct Piece {
    uint32_t begin, end;
    bool is_match;
  };
  void push_split(const Split& parent, uint32_t begin, uint32_t end);
  void split_by_matches(const Split& parent, std::span<const Piece> pieces,
                        SplitBehavior behavior);

  std::string text_, next_text_;
  std::vector<Alignment> align_, next_align_;
  std::vector<Split> splits_, next_splits_;
  std::vector<Piece> pieces_;
  std::vector<PatternPiece> pattern_pieces_;
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;
};

template <typename Pred>
void PreTokenizedString::split_on_chars(Pred is_delimiter, SplitBehavior behavior) {
  next_splits_.clear();
  for (const Split& s : splits_) {
    if (s.token_id >= 0) {
      next_splits_.push_back(s);
      continue;
    }
    // Each delimiter character is a match of its own, the text between them one non-match.
    pieces_.clear();
    const std::string_view t = text(s);
    std::size_t i = 0;
    std::size_t last = 0;
    while (i < t.size()) {
      const std::size_t at = i;
      if (is_delimiter(unicode::decode_utf8(t, i))) {
        if (last < at) pieces_.push_back({uint32_t(last), uint32_t(at), false});
        pieces_.push_back({uint32_t(at), uint32_t(i), true});
        last = i;
      }
    }
    if (last < t.size()) pieces_.push_back({uint32_t(last), uint32_t(t.size()), false});
    split_by_matches(s, pieces_, behavior);
  }
  splits_.swap(next_splits_);
}

template <typename Cut>
void PreTokenizedString::split_with(Cut cut) {
  next_splits_.clear();
  for (const Split& s : splits_) {
    if (s.token_id >= 0) {
      next_splits_.push_back(s);
      continue;
    }
    ranges_.clear();
    cut(text(s), ranges_);
    for (const auto& [b, e] : ranges_) push_split(s, b, e);
  }
  splits_.swap(next_splits_);
}

template <typename Find>
void PreTokenizedString::split_on_pattern(Find find, SplitBehavior behavior) {
  next_splits_.clear();
  for (const Split& s : splits_) {
    if (s.token_id >= 0) {
      next_splits_.push_back(s);
      continue;
    }
    pattern_pieces_.clear();
    find(text(s), pattern_pieces_);
    pieces_.clear();
    for (const PatternPiece& p : pattern_pieces_) pieces_.push_back({p.begin, p.end, p.is_match});
    split_by_matches(s, pieces_, behavior);
  }
  splits_.swap(next_splits_);
}

template <typename Rewrite>
void PreTokenizedString::rewrite(Rewrite rewrite) {
  next_text_.clear();
  next_align_.clear();
  next_splits_.clear();
  for (const Split& s : splits_) {
    Split n = s;
    n.begin = static_cast<uint32_t>(next_text_.size());
    if (s.token_id >= 0) {
      next_text_.append(text_, s.begin, s.end - s.begin);
      next_align_.insert(next_align_.end(), align_.begin() + s.begin, align_.begin() + s.end);
    } else {
      rewrite(text(s), std::span<const Alignment>(align_).subspan(s.begin, s.end - s.begin),
              next_text_, next_align_);
    }
    n.end = static_cast<uint32_t>(next_text_.size());
    if (n.end > n.begin) next_splits_.push_back(n);
  }
  text_.swap(next_text_);
  align_.swap(next_align_);
  splits_.swap(next_splits_);
}

}  // namespace il::text
