// The library's Encoding while it is being built (one per input sequence, then merged): the
// fields we report plus the token strings some post-processors read.
#pragma once

#include <cstdint>
#include <string_view>
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
  // Token strings; they point into the model, the added vocabulary, the post-processor or the
  // normalised text of the current encode call, so they live no longer than that call.
  std::vector<std::string_view> tokens;

  std::size_t size() const { return ids.size(); }
  void clear();
  void reserve(std::size_t n);
  void push(int32_t id, int32_t type_id, std::pair<uint32_t, uint32_t> offset, uint8_t special,
            int8_t sequence_id, std::string_view token);
  void append(const TokenSequence& other);
  // Keeps the first (right truncation) or last (left truncation) n tokens.
  void truncate(std::size_t n, TruncationDirection direction);
};

// Applies the library's truncate_encodings() to one or two sequences, for a budget that already
// excludes the special tokens the post-processor will add. Throws il::Error where the library
// refuses (OnlySecond without a pair, or a target sequence too short to absorb the excess).
void truncate_sequences(TokenSequence& first, TokenSequence* second, std::size_t max_length,
                        TruncationStrategy strategy, TruncationDirection direction);

}  // namespace il::text
