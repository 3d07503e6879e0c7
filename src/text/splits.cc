#include "text/splits.h"

namespace il::text {

// The library folds the whole list of pieces; each rule below only ever looks one piece back
// (or, for MergedWithNext, one ahead), so the same ranges come out of a fold as the pieces come.
void PieceFolder::add(uint32_t begin, uint32_t end, bool is_match) {
  switch (behavior_) {
    case SplitBehavior::kRemoved:
      if (!is_match) emit(begin, end);
      return;
    case SplitBehavior::kIsolated:
      emit(begin, end);
      return;
    case SplitBehavior::kMergedWithNext:
      // The library folds from the end: a match joins the piece after it when that piece is not
      // a match itself.
      if (has_pending_) {
        if (is_match) {
          emit(pending_.begin, pending_.end);
          pending_ = {begin, end};
        } else {
          emit(pending_.begin, end);
          has_pending_ = false;
        }
      } else if (is_match) {
        pending_ = {begin, end};
        has_pending_ = true;
      } else {
        emit(begin, end);
      }
      return;
    case SplitBehavior::kMergedWithPrevious:
    case SplitBehavior::kContiguous: {
      // A match joins the range before it (MergedWithPrevious: the first match after a
      // non-match; Contiguous: any piece of the same kind as the one before, the first piece
      // counting as after a non-match).
      const bool merge = behavior_ == SplitBehavior::kContiguous ? is_match == previous_match_
                                                                 : is_match && !previous_match_;
      previous_match_ = is_match;
      if (merge && has_pending_) {
        pending_.end = end;
        return;
      }
      if (has_pending_) emit(pending_.begin, pending_.end);
      pending_ = {begin, end};
      has_pending_ = true;
      return;
    }
  }
}

void PieceFolder::finish() {
  if (has_pending_) emit(pending_.begin, pending_.end);
  has_pending_ = false;
  previous_match_ = false;
}

}  // namespace il::text
