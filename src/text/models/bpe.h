// BPE: a word starts as its characters (each a vocabulary token, else byte-fallback tokens or
// the unknown token), then the lowest-ranked merge among adjacent pairs is applied, again and
// again, as the library's Word::merge_all does (a priority queue over (rank, position) with
// linked symbols, so a word of n characters costs O(n log n)). No cache: merging is cheap, and
// the model stays free of shared mutable state.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "text/models/model.h"
#include "text/models/vocab.h"

namespace il::text {

class Bpe final : public Model {
 public:
  explicit Bpe(const JsonRef& j);
  Bpe(const Bpe&) = delete;  // the token index points into the vocabulary
  Bpe& operator=(const Bpe&) = delete;

  std::string type() const override { return "BPE"; }
  void tokenize(std::string_view word, std::vector<ModelToken>& out) const override;
  std::optional<int32_t> token_to_id(std::string_view token) const override {
    return vocab_.find(token);
  }
  std::optional<std::string_view> id_to_token(int32_t id) const override {
    return vocab_.token(id);
  }
  std::size_t vocab_size() const override { return vocab_.size(); }

 private:
  struct Merge {
    uint32_t rank;
    int32_t new_id;
  };
  // (left id, right id) -> merge, open addressing over 64-bit keys.
  class MergeTable {
   public:
    void reserve(std::size_t n);
    void insert(int32_t left, int32_t right, Merge m);  // a later merge of a pair replaces it
    const Merge* find(int32_t left, int32_t right) const;
    std::size_t size() const { return size_; }

   private:
    static uint64_t key(int32_t a, int32_t b) {
      return (uint64_t{static_cast<uint32_t>(a)} << 32) | static_cast<uint32_t>(b);
    }
    std::size_t slot(uint64_t k) const {
      return static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ull) >> shift_);
    }
    static constexpr uint64_t kEmpty = ~uint64_t{0};
    std::vector<uint64_t> keys_;
    std::vector<Merge> values_;
    int shift_ = 64;
    std::size_t size_ = 0;
  };

  // token -> id in one or two probes of a flat table (the vocabulary's own map is node-based:
  // several cache misses a lookup). Loading Gemma 3 looks up 1.5 million merge tokens. Falls back
  // to the vocabulary when two tokens share an id (its reverse table then names only one).
  class TokenIndex {
   public:
    void build(const JsonRef& vocab_json, const Vocab& vocab);
    int32_t find(std::string_view token) const;  // -1 when absent

   private:
    struct Slot {
      uint32_t tag;  // high bits of the hash, to skip most string comparisons
      int32_t id;    // -1: empty
    };
    const Vocab* vocab_ = nullptr;
    bool complete_ = false;
    std::vector<Slot> slots_;
    int shift_ = 64;
  };

  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    uint32_t len;  // bytes of the word it covers; 0 once merged into its left neighbour
  };

  void load_merges(const JsonRef& merges);
  // The id of the vocabulary token for one character of the word (with the prefix / suffix
  // the position calls for), or -1.
  int32_t char_id(std::string_view ch, bool first, bool last, std::string& scratch) const;
  int32_t unk_id(std::string_view word) const;
  void initial_symbols(std::string_view word, std::vector<Symbol>& symbols) const;
  void merge_all(std::vector<Symbol>& symbols) const;

  Vocab vocab_;
  TokenIndex index_;
  MergeTable merges_;
  std::optional<std::string> unk_token_;
  std::optional<int32_t> unk_id_;
  std::string prefix_;  // continuing_subword_prefix ("" when absent: the same effect)
  std::string suffix_;  // end_of_word_suffix
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  std::array<int32_t, 256> byte_ids_{};  // "<0xAB>" tokens, -1 where absent
  // Single-character tokens by code point below 0x800, used when no prefix or suffix applies
  // (-1: not in the vocabulary).
  std::vector<int32_t> small_char_ids_;
};

}  // namespace il::text
