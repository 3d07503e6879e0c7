// SentencePiece's own encoding of a text, as the `sentencepiece` library runs a Unigram model
// file (what slow transformers tokenizers such as SiglipTokenizer call): its normaliser (the
// charsmap's longest match at each position, malformed bytes as U+FFFD, extra whitespace removed,
// spaces escaped to U+2581, the dummy prefix), then a Viterbi search over the pieces that may
// match (normal and user-defined ones; control, unknown, byte and unused pieces never do) with
// float sums, a character no piece starts with scored as the lowest normal score minus 10, and
// runs of unknown characters merged into one unknown id.
//
// This differs from the Hugging Face library's Unigram + Precompiled pipeline in the details the
// library changed: which pieces match, the unknown score, float vs double sums, and a charsmap
// applied per grapheme there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/models/unigram_trie.h"
#include "text/precompiled.h"
#include "text/sentencepiece_model.h"

namespace il::text {

class SentencePieceEncoder {
 public:
  // Throws il::Error naming `source` for a model this encoder does not run (BPE, byte fallback,
  // whitespace as a suffix) or a broken charsmap.
  SentencePieceEncoder(SentencePieceModel model, const std::string& source);

  // The normalised text the pieces are matched against.
  std::string normalize(std::string_view text) const;
  // The ids of the text's pieces.
  std::vector<int32_t> encode(std::string_view text) const;
  // The id of a piece spelled exactly `piece` (any type; a control, unknown or byte piece before
  // another spelled the same), or nullopt.
  std::optional<int32_t> piece_id(std::string_view piece) const;
  const SentencePieceModel& model() const { return model_; }

 private:
  // The normaliser's step at the front of `text`: what it becomes and how many bytes it takes.
  std::pair<std::string_view, std::size_t> normalize_prefix(std::string_view text) const;

  SentencePieceModel model_;
  std::optional<PrecompiledCharsmap> charsmap_;
  UnigramTrie trie_;                     // the pieces that may match, by id
  UnigramTrie user_defined_;             // matched first by the normaliser, copied as they are
  std::unordered_map<std::string, int32_t> ids_;           // normal, user-defined and unused pieces
  std::unordered_map<std::string, int32_t> reserved_ids_;  // control, unknown and byte pieces
  float unk_score_ = 0.0f;
  float max_score_ = 0.0f;
};

}  // namespace il::text
