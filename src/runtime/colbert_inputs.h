// PyLate's input conventions for multi-vector (ColBERT) folders, resolved once against the
// folder's tokenizer: the marker ids, the token queries are expanded with, the skiplist ids, and
// the tokenizer's padding side; then the assembly of a query's or a document's token ids.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "inferencelayer/types.h"
#include "models/colbert_config.h"
#include "text/tokenizer.h"

namespace il::runtime {

struct ColbertTokens {
  std::optional<int32_t> query_marker, document_marker;  // absent for an empty prefix
  int32_t expansion_id = 0;        // the mask token, else EOS, else the pad token (as PyLate picks)
  std::vector<int32_t> skiplist;   // sorted ids of the skiplist words found in the vocabulary
  bool pad_left = false;           // tokenizer_config.json padding_side "left"
  bool truncate_left = false;      // tokenizer_config.json truncation_side "left"
  std::size_t query_length = 0, document_length = 0;
  bool expand_queries = true;
  // attend_to_expansion_tokens false: a query's expansion tokens are no keys (attention mask 0),
  // TokenInput::attended_tokens stops before them.
  bool mask_expansion = false;
};

// The markers and the expansion token must exist in the tokenizer (PyLate adds the markers to
// it before saving); il::Error names the folder's file otherwise. `dir` holds
// tokenizer_config.json / special_tokens_map.json (either may be absent).
ColbertTokens resolve_colbert_tokens(const models::ColbertConfig& config, const text::Tokenizer& tokenizer,
                                     const std::filesystem::path& dir);

// The token budget of the tokenizer call: the length minus the marker's place.
std::size_t colbert_text_budget(const ColbertTokens& t, bool query);

// From the tokenizer's ids of a text (special tokens added, cut to colbert_text_budget): queries
// padded to the budget with the expansion token on the padding side (when expand_queries), the
// marker inserted after the first token (PyLate's insert_prefix_token); documents get `keep`
// (0 for a skiplist id). With mask_expansion a query's attended_tokens counts the tokens before
// its expansion tokens (the marker included).
TokenInput colbert_input(std::vector<int32_t> ids, const ColbertTokens& t, bool query);

}  // namespace il::runtime
