#include "text/token_sequence.h"

#include <algorithm>

#include "core/error.h"
#include "text/scratch.h"

namespace il::text {

void TokenSequence::clear() {
  ids.clear();
  type_ids.clear();
  offsets.clear();
  special_tokens_mask.clear();
  sequence_ids.clear();
  spaces.clear();
}

void TokenSequence::push(int32_t id, int32_t type_id, std::pair<uint32_t, uint32_t> offset,
                         uint8_t special, int8_t sequence_id) {
  ids.push_back(id);
  type_ids.push_back(type_id);
  offsets.push_back(offset);
  special_tokens_mask.push_back(special);
  sequence_ids.push_back(sequence_id);
}

void TokenSequence::complete(int32_t type_id, int8_t sequence_id) {
  type_ids.assign(ids.size(), type_id);
  special_tokens_mask.assign(ids.size(), 0);
  sequence_ids.assign(ids.size(), sequence_id);
}

void TokenSequence::release_large() {
  release_if_large(ids);
  release_if_large(type_ids);
  release_if_large(offsets);
  release_if_large(special_tokens_mask);
  release_if_large(sequence_ids);
  release_if_large(spaces);
}

namespace {
template <typename T>
void keep(std::vector<T>& v, std::size_t n, TruncationDirection direction) {
  if (v.size() <= n) return;
  switch (direction) {
    case TruncationDirection::kRight: v.resize(n); break;
    case TruncationDirection::kLeft:
      v.erase(v.begin(), v.end() - static_cast<std::ptrdiff_t>(n));
      break;
  }
}
}  // namespace

void TokenSequence::truncate(std::size_t n, TruncationDirection direction) {
  keep(ids, n, direction);
  keep(type_ids, n, direction);
  keep(offsets, n, direction);
  keep(special_tokens_mask, n, direction);
  keep(sequence_ids, n, direction);
  keep(spaces, n, direction);
}

void truncate_sequences(TokenSequence& first, TokenSequence* second, std::size_t max_length,
                        TruncationStrategy strategy, TruncationDirection direction) {
  if (max_length == 0) {
    // The library empties both sequences here, whatever the strategy.
    first.truncate(0, direction);
    if (second != nullptr) second->truncate(0, direction);
    return;
  }
  const std::size_t total = first.size() + (second != nullptr ? second->size() : 0);
  if (total <= max_length) return;
  const std::size_t to_remove = total - max_length;
  switch (strategy) {
    case TruncationStrategy::kLongestFirst: {
      if (second == nullptr) {
        first.truncate(max_length, direction);
        return;
      }
      // Shorten the longer sequence first; if that is not enough, split the budget evenly, the
      // extra token of an odd budget going to the longer sequence.
      std::size_t n1 = first.size();
      std::size_t n2 = second->size();
      const bool swap = n1 > n2;
      if (swap) std::swap(n1, n2);
      n2 = n1 > max_length ? n1 : std::max(n1, max_length - n1);
      if (n1 + n2 > max_length) {
        n1 = max_length / 2;
        n2 = n1 + max_length % 2;
      }
      if (swap) std::swap(n1, n2);
      first.truncate(n1, direction);
      second->truncate(n2, direction);
      return;
    }
    case TruncationStrategy::kOnlyFirst:
    case TruncationStrategy::kOnlySecond: {
      TokenSequence* target = &first;
      if (strategy == TruncationStrategy::kOnlySecond) {
        if (second == nullptr) {
          throw make_error("truncation OnlySecond needs a pair of sequences, and the input of ",
                           total, " tokens exceeds the limit of ", max_length);
        }
        target = second;
      }
      if (target->size() <= to_remove) {
        throw make_error("truncation ",
                         strategy == TruncationStrategy::kOnlyFirst ? "OnlyFirst" : "OnlySecond",
                         ": the sequence to truncate has ", target->size(), " tokens, but ",
                         to_remove, " must go to fit the limit of ", max_length);
      }
      target->truncate(target->size() - to_remove, direction);
      return;
    }
  }
}

}  // namespace il::text
