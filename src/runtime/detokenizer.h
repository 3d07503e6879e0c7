// Streaming detokenization: the text each new token adds to a sequence's output, never splitting
// a UTF-8 character. A byte-level token may hold part of a character; the tokenizer's decoder
// then gives a replacement character (or an incomplete byte sequence) at the end, and the text
// waits for the tokens that complete it. Decoding covers only the tokens since the last emitted
// text (plus the few before them, for decoders that look at neighbours), so a long output costs
// no more per token than a short one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace il::runtime {

class Detokenizer {
 public:
  explicit Detokenizer(const text::Tokenizer& tokenizer) : tok_(tokenizer) {}
  // The text token `id` completes (maybe empty). Special tokens are skipped, as in the decoded
  // output of transformers' batch_decode(skip_special_tokens=True).
  std::string push(int32_t id);

 private:
  const text::Tokenizer& tok_;
  std::vector<int32_t> ids_;
  std::size_t prefix_ = 0, read_ = 0;  // ids_[prefix_, read_) decode to text already emitted
};

// Whether `s` ends inside a UTF-8 character (a lead byte without all its continuation bytes).
bool ends_mid_character(const std::string& s);

}  // namespace il::runtime
