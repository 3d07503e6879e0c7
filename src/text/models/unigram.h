// Unigram (SentencePiece): the segmentation of a word into vocabulary pieces with the highest
// total score (Viterbi). Characters no piece covers become the unknown token, consecutive ones
// fused into one, or, with byte_fallback, the <0xXX> pieces of their bytes.
#pragma once

#include <array>

#include "text/models/model.h"
#include "text/models/unigram_trie.h"

namespace il::text {

class Unigram final : public Model {
 public:
  explicit Unigram(const JsonRef& j);

  std::string type() const override { return "Unigram"; }
  void tokenize(std::string_view word, std::vector<ModelToken>& out) const override;
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  std::optional<std::string_view> id_to_token(int32_t id) const override;
  std::size_t vocab_size() const override { return pieces_.size(); }

 private:
  // The token a run of fused unknown characters becomes: a piece (the run's text may be one),
  // the unknown token, or -1 when byte_fallback spells it as the tokens of its bytes.
  int32_t unknown_token(std::string_view text) const;

  std::vector<std::string> pieces_;  // by id
  std::vector<double> scores_;       // by id
  UnigramTrie trie_;
  int32_t unk_id_ = -1;  // -1: none
  int32_t empty_piece_id_ = -1;  // an empty piece is in the vocabulary but never matched
  double unk_score_ = 0;  // the lowest score minus the library's penalty of 10
  bool byte_fallback_ = false;
  std::array<int32_t, 256> byte_ids_{};  // id of "<0xXX>" per byte, -1 when missing
};

}  // namespace il::text
