// PyLate's ColBERT settings (config_sentence_transformers.json of a PyLate folder, e.g.
// LFM2-ColBERT-350M), with PyLate's defaults where a key is absent or null: how queries and
// documents are tokenized (a marker token inserted after the first token, queries padded to
// query_length by "expansion" tokens, documents cut at document_length) and which document
// tokens MaxSim skips. Read here, in one place, for the ColBERT head that is still to be wired
// (per-token vectors and MaxSim scoring: issue 21, item 4).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace il::models {

struct ColbertConfig {
  // Markers inserted right after each sequence's first token ("" = none). PyLate adds them to
  // the tokenizer as tokens of their own.
  std::string query_prefix = "[Q] ";
  std::string document_prefix = "[D] ";
  // Lengths in tokens, marker included: queries are padded up to query_length (when
  // do_query_expansion) and truncated to it; documents truncated to document_length.
  int query_length = 32;
  int document_length = 180;
  bool do_query_expansion = true;
  // Whether the expansion (padding) tokens are attended to as keys; PyLate forces false without
  // query expansion.
  bool attend_to_expansion_tokens = false;
  // Token strings whose ids are dropped from documents before MaxSim (default: Python's
  // string.punctuation, one character each).
  std::vector<std::string> skiplist_words;
};

// PyLate's defaults for every field (skiplist: the 32 characters of string.punctuation).
ColbertConfig default_colbert_config();

// The fields of `j` (config_sentence_transformers.json, named `source` in messages) over the
// defaults; a present field of the wrong type or range throws il::Error naming the file and field.
ColbertConfig parse_colbert_config(const nlohmann::json& j, const std::string& source);

// `dir`/config_sentence_transformers.json when it exists, else the defaults.
ColbertConfig read_colbert_config(const std::filesystem::path& dir);

}  // namespace il::models
