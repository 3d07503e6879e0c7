// The tokenizer of SigLIP folders that ship `spiece.model` and no tokenizer.json (the google/siglip
// checkpoints): what transformers 5.x's SiglipTokenizer gives, a slow tokenizer over the
// `sentencepiece` library, which has no tokenizer.json form.
//
// A text becomes "▁" + the text with every "▁" made a space; it is split at the special tokens
// "</s>" and "<unk>" (the whitespace beside them stripped). Each other part is cleaned as SigLIP's
// training text was (lowercased with Python's str.lower(), the 32 ASCII punctuation characters
// deleted, runs of Python whitespace made one space, stripped), then encoded by SentencePiece
// behind a "<unk>" whose own pieces are dropped (so the part keeps its word boundary). "</s>" is
// appended unless the ids already end with it; with a length, the ids are cut to leave room for it
// and padded with the pad id ("</s>") to that length, as SiglipProcessor(padding="max_length").
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "text/sentencepiece.h"

namespace il::text {

class SiglipSpmTokenizer {
 public:
  // spiece.model and tokenizer_config.json (do_lower_case, model_max_length, the eos / unk / pad
  // tokens) of `folder`; il::Error naming the file otherwise.
  static SiglipSpmTokenizer load(const std::filesystem::path& folder);
  SiglipSpmTokenizer(SentencePieceEncoder encoder, bool lowercase, std::size_t max_length, const std::string& source);

  // The ids without padding or truncation, "</s>" last unless add_eos is false
  // (add_special_tokens=False).
  std::vector<int32_t> encode(std::string_view text, bool add_eos = true) const;
  // truncation=True at `max_length`: the text's ids cut to leave room for the "</s>" appended
  // after them (from the end, or from the start with from_left), as transformers truncates.
  std::vector<int32_t> encode_truncated(std::string_view text, std::size_t max_length, bool add_eos = true,
                                        bool from_left = false) const;
  // encode_truncated's cut of ids encode(text, false) already gave: a caller that first checks the
  // whole text's length cuts it without tokenizing it again.
  std::vector<int32_t> truncate(std::vector<int32_t> text_ids, std::size_t max_length, bool add_eos = true,
                                bool from_left = false) const;
  // padding="max_length", truncation=True: exactly max_length() ids.
  std::vector<int32_t> encode_padded(std::string_view text) const;
  // The piece of an id ("" outside the vocabulary), and whether it is one of the special tokens.
  std::string_view piece(int32_t id) const;
  bool is_special(int32_t id) const { return id == eos_ || id == unk_ || id == pad_; }

  std::size_t max_length() const { return max_length_; }
  int32_t eos_id() const { return eos_; }
  int32_t pad_id() const { return pad_; }
  std::size_t vocab_size() const { return encoder_.model().pieces.size(); }

 private:
  std::vector<int32_t> tokens(std::string_view text) const;
  std::vector<int32_t> part_ids(std::string_view part) const;

  SentencePieceEncoder encoder_;
  bool lowercase_ = true;
  std::size_t max_length_ = 64;
  int32_t eos_ = -1, unk_ = -1, pad_ = -1, space_piece_ = -1;
  std::size_t unk_pieces_ = 0;  // how many pieces "<unk>" itself encodes to
};

// Python's str.lower() of UTF-8 text: full lowercase mappings, and capital sigma as final sigma
// where a cased letter precedes it and none follows (case-ignorable characters skipped).
std::string python_lower(std::string_view text);
// Python's str.isspace() for one code point.
bool is_python_space(char32_t c);

}  // namespace il::text
