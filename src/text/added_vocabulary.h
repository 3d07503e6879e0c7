// The `added_tokens` of tokenizer.json: tokens matched in the text before the model sees it. As in
// the library, tokens with normalized=false are found in the raw text, the others in the
// normalised text of what is left; a match is the leftmost one, the longest at that position.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/json_util.h"
#include "text/string_hash.h"

namespace il::text {

class Model;
class Normalizer;

struct AddedToken {
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
  // What decode() and id_to_token() write for it: the content, normalised when the token is
  // (the library keeps the normalised form so the decoder sees what the encoder matched).
  std::string decoded;
};

// A piece of text the added vocabulary split off: byte range, and the token id for a match (-1
// for the text in between).
struct AddedSplit {
  uint32_t begin;
  uint32_t end;
  int32_t id;
};

class AddedVocabulary {
 public:
  // Adds the tokens of the `added_tokens` list one by one, assigning ids the way the library
  // does (the model's id for a token it knows, else the next free id after the vocabulary; the
  // "id" written in the file is not consulted), then builds the matchers.
  void load(const JsonRef& list, const Model& model, const Normalizer* normalizer);

  bool empty() const { return by_content_.empty(); }
  std::optional<int32_t> token_to_id(std::string_view content) const;
  const AddedToken* token(int32_t id) const;
  bool is_special(std::string_view content) const;
  // Added tokens not in the model vocabulary.
  std::size_t count_not_in(const Model& model) const;

  bool has_raw_tokens() const { return !raw_.empty(); }
  bool has_normalized_tokens() const { return !normalized_.empty(); }
  // Cuts `text` into pieces covering all of it, the matches of the raw (normalized = false) or
  // the normalised tokens with their lstrip / rstrip / single_word rules applied.
  void split(std::string_view text, bool normalized_tokens, std::vector<AddedSplit>& out) const;

 private:
  // Byte trie over the token contents for leftmost-longest matching.
  class Matcher {
   public:
    void add(std::string_view pattern, int32_t id);
    bool empty() const { return nodes_.size() <= 1; }
    // Longest pattern starting at text[pos]: its length and id, or length 0.
    std::pair<std::size_t, int32_t> longest_at(std::string_view text, std::size_t pos) const;
    bool may_start(unsigned char b) const { return first_[b]; }

   private:
    struct Node {
      std::vector<std::pair<unsigned char, uint32_t>> next;  // sorted by byte
      int32_t id = -1;
    };
    std::vector<Node> nodes_{1};
    std::array<bool, 256> first_{};
  };

  void add(const AddedToken& t, const Model& model);

  StringMap<int32_t> by_content_;
  std::unordered_map<int32_t, AddedToken> by_id_;
  std::vector<AddedToken> special_tokens_;  // in order of addition
  std::vector<AddedToken> added_tokens_;    // the non-special ones, in order of addition
  StringSet special_set_;
  int32_t max_id_ = -1;  // largest id given to an added token
  Matcher raw_;
  Matcher normalized_;
};

}  // namespace il::text
