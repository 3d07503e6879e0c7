// The library's Encoding while it is being built (one per input sequence, then merged): the
// fields we report plus what the byte-level offset trimming reads of the token strings.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "text/tokenizer.h"

namespace il::text {

struct TokenSequence {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  std::vector<uint8_t> special_tokens_mask;
  std::vector<int8_t> sequence_ids;
  // The space characters at the start and at the end of each token's string (see
  // byte_level_spaces), for post-processors that trim offsets; empty for the others.
  std::vector<std::pair<uint32_t, uint32_t>> spaces;

  std::size_t size() const { return ids.size(); }
  void clear();
  void push(int32_t id, int32_t type_id, std::pair<uint32_t, uint32_t> offset, uint8_t special,
            int8_t sequence_id);
  // After a sequence's tokens were pushed as ids and offsets (and spaces) only: gives them all
  // the same type id and sequence id, none of them special.
  void complete(int32_t type_id, int8_t sequence_id);
  // Frees the buffers that grew large (see text/scratch.h).
  void release_large();
  // Keeps the first (right truncation) or last (left truncation) n tokens.
  void truncate(std::size_t n, TruncationDirection direction);
};

// Applies the library's truncate_encodings() to one or two sequences, for a budget that already
// excludes the special tokens the post-processor will add. Throws il::Error where the library
// refuses (OnlySecond without a pair, or a target sequence too short to absorb the excess).
void truncate_sequences(TokenSequence& first, TokenSequence* second, std::size_t max_length,
                        TruncationStrategy strategy, TruncationDirection direction);

}  // namespace il::text
