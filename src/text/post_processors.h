// Post-processors: the `post_processor` section of tokenizer.json (special tokens, type ids).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "text/json_util.h"
#include "text/token_sequence.h"

namespace il::text {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // How many special tokens process() adds to one sequence or to a pair.
  virtual std::size_t added_tokens(bool pair) const = 0;
  // Whether process() trims offsets by the tokens' spaces: the sequences it gets must then carry
  // TokenSequence::spaces.
  virtual bool trims_offsets() const { return false; }
  // Rewrites `seqs` (the one or two input sequences, already truncated, with their sequence
  // ids) into the list of pieces the library's process_encodings() returns; the caller
  // concatenates them. texts[i] is the text of sequence i (offsets are byte ranges into it).
  virtual void process(std::vector<TokenSequence>& seqs, bool add_special_tokens,
                       std::span<const std::string_view> texts) const = 0;
};

std::unique_ptr<PostProcessor> make_post_processor(const JsonRef& j);

// The characters at the start and at the end of a token string that the byte-level offset
// trimming counts as spaces (the byte-level 'Ġ' or whitespace); an all-space token counts all
// of its characters on both sides.
std::pair<uint32_t, uint32_t> byte_level_spaces(std::string_view token);

}  // namespace il::text
