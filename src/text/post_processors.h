// Post-processors: the `post_processor` section of tokenizer.json (special tokens, type ids).
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "text/json_util.h"
#include "text/token_sequence.h"

namespace il::text {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // How many special tokens process() adds to one sequence or to a pair.
  virtual std::size_t added_tokens(bool pair) const = 0;
  // Rewrites `seqs` (the one or two input sequences, already truncated, with their sequence
  // ids) into the list of pieces the library's process_encodings() returns; the caller
  // concatenates them. texts[i] is the text of sequence i (offsets are byte ranges into it).
  virtual void process(std::vector<TokenSequence>& seqs, bool add_special_tokens,
                       std::span<const std::string_view> texts) const = 0;
};

std::unique_ptr<PostProcessor> make_post_processor(const JsonRef& j);

}  // namespace il::text
