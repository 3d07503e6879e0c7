#include "text/pre_tokenized_string.h"

namespace il::text {

void PreTokenizedString::clear() {
  text_.clear();
  align_.clear();
  splits_.clear();
}

void PreTokenizedString::append(const NormalizedString& piece, std::size_t begin, std::size_t end,
                                int32_t token_id) {
  if (begin >= end) return;
  const auto base = static_cast<uint32_t>(text_.size());
  text_.append(piece.text(), begin, end - begin);
  const auto a = piece.alignments();
  align_.insert(align_.end(), a.begin() + static_cast<std::ptrdiff_t>(begin),
                a.begin() + static_cast<std::ptrdiff_t>(end));
  // A slice starts where the source of its first byte starts (the library's original_shift).
  splits_.push_back({base, static_cast<uint32_t>(base + end - begin), a[begin].begin, token_id});
}

void PreTokenizedString::push_split(const Split& parent, uint32_t begin, uint32_t end) {
  if (begin >= end) return;
  Split s;
  s.begin = parent.begin + begin;
  s.end = parent.begin + end;
  s.shift = align_[s.begin].begin;
  next_splits_.push_back(s);
}

void PreTokenizedString::split_by_matches(const Split& parent, std::span<const Piece> pieces,
                                          SplitBehavior behavior) {
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (const Piece& p : pieces) {
        if (!p.is_match) push_split(parent, p.begin, p.end);
      }
      return;
    case SplitBehavior::kIsolated:
      for (const Piece& p : pieces) push_split(parent, p.begin, p.end);
      return;
    case SplitBehavior::kContiguous:
    case SplitBehavior::kMergedWithPrevious:
    case SplitBehavior::kMergedWithNext:
      break;
  }
  // The merging behaviours fold the pieces into ranges first, as the library does.
  ranges_.clear();
  bool previous_match = false;
  if (behavior == SplitBehavior::kMergedWithNext) {
    // Folded from the end: a match joins the range that follows it.
    for (std::size_t k = pieces.size(); k-- > 0;) {
      const Piece& p = pieces[k];
      if (p.is_match && !previous_match && !ranges_.empty()) {
        ranges_.back().first = p.begin;
      } else {
        ranges_.emplace_back(p.begin, p.end);
      }
      previous_match = p.is_match;
    }
    for (std::size_t k = ranges_.size(); k-- > 0;) {
      push_split(parent, ranges_[k].first, ranges_[k].second);
    }
    return;
  }
  for (const Piece& p : pieces) {
    const bool merge = behavior == SplitBehavior::kContiguous ? p.is_match == previous_match
                                                              : p.is_match && !previous_match;
    if (merge && !ranges_.empty()) {
      ranges_.back().second = p.end;
    } else {
      ranges_.emplace_back(p.begin, p.end);
    }
    previous_match = p.is_match;
  }
  for (const auto& [b, e] : ranges_) push_split(parent, b, e);
}

}  // namespace il::text
