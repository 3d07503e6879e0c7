// Cutting one split of normalised text into smaller ones, the way the library's
// NormalizedString::split treats its delimiters (SplitDelimiterBehavior). The pieces of a cut
// (consecutive byte ranges covering the split, the delimiters flagged as matches) are folded as
// they come, so a cut never holds more than the ranges it produces.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "text/regex.h"
#include "text/unicode.h"

namespace il::text {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// A byte range [begin, end) inside the split being cut.
struct Range {
  uint32_t begin = 0;
  uint32_t end = 0;
};

// Folds pieces into the ranges `behavior` keeps and appends the non-empty ones to `out` (empty
// results are dropped, as the library drops empty splits). Call finish() after the last piece.
class PieceFolder final : public PieceSink {
 public:
  PieceFolder(SplitBehavior behavior, std::vector<Range>& out) : behavior_(behavior), out_(out) {}
  void add(uint32_t begin, uint32_t end, bool is_match) override;
  void finish();

 private:
  void emit(uint32_t begin, uint32_t end) {
    if (begin < end) out_.push_back({begin, end});
  }

  SplitBehavior behavior_;
  std::vector<Range>& out_;
  // The range that a later piece may still extend (or, for MergedWithNext, a match waiting to
  // join the piece after it).
  Range pending_;
  bool has_pending_ = false;
  bool previous_match_ = false;
};

// Cuts `text` at the characters where is_delimiter(c) is true, each delimiter a match of its own
// and the text between them one non-match, folded as `behavior` says.
template <typename Pred>
void cut_on_chars(std::string_view text, Pred is_delimiter, SplitBehavior behavior,
                  std::vector<Range>& out) {
  PieceFolder fold(behavior, out);
  std::size_t i = 0;
  std::size_t last = 0;
  while (i < text.size()) {
    const std::size_t at = i;
    if (is_delimiter(unicode::decode_utf8(text, i))) {
      if (last < at) fold.add(uint32_t(last), uint32_t(at), false);
      fold.add(uint32_t(at), uint32_t(i), true);
      last = i;
    }
  }
  if (last < text.size()) fold.add(uint32_t(last), uint32_t(text.size()), false);
  fold.finish();
}

}  // namespace il::text
