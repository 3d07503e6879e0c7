// WordPiece: greedy longest-match-first over the vocabulary, continuation pieces prefixed.
#pragma once

#include "text/models/model.h"
#include "text/models/vocab.h"

namespace il::text {

class WordPiece final : public Model {
 public:
  explicit WordPiece(const JsonRef& j);

  std::string type() const override { return "WordPiece"; }
  void tokenize(std::string_view word, std::vector<ModelToken>& out) const override;
  std::optional<int32_t> token_to_id(std::string_view token) const override {
    return vocab_.find(token);
  }
  std::optional<std::string_view> id_to_token(int32_t id) const override {
    return vocab_.token(id);
  }
  std::size_t vocab_size() const override { return vocab_.size(); }

 private:
  int32_t unk_id(std::size_t word_bytes) const;

  Vocab vocab_;
  std::string unk_token_;
  std::optional<int32_t> unk_id_;
  std::string prefix_;
  std::size_t max_input_chars_per_word_;
};

}  // namespace il::text
