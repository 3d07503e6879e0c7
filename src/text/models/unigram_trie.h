// A byte trie of the Unigram vocabulary laid out as a double array: the child of node s for byte
// c is t = base(s) + c when check(t) == s, so walking a word costs one array read per byte. The
// Viterbi search walks it from every character position to find all vocabulary pieces that start
// there (the library's common_prefix_search over its node trie).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace il::text {

class UnigramTrie {
 public:
  // keys[id] is the piece of token `id`. With several ids spelled the same the last one wins, as
  // in the library's token -> id map. Empty pieces can never match and are left out.
  void build(const std::vector<std::string>& keys);

  // Calls on_match(length_in_bytes, id) for every key that is a prefix of `text`, shortest first.
  template <typename OnMatch>
  void for_each_prefix(std::string_view text, OnMatch on_match) const;

  // The id of exactly `key`, or -1.
  int32_t find(std::string_view key) const;

  struct Unit {
    int32_t base = 0;
    int32_t check = -1;  // the parent node; -1: the slot is free
    int32_t id = -1;     // >= 0: a key ends at this node
  };

 private:
  std::vector<Unit> units_;
};

template <typename OnMatch>
void UnigramTrie::for_each_prefix(std::string_view text, OnMatch on_match) const {
  const Unit* units = units_.data();
  const auto size = static_cast<uint32_t>(units_.size());
  int32_t node = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto next =
        static_cast<uint32_t>(units[node].base) + static_cast<unsigned char>(text[i]);
    if (next >= size || units[next].check != node) return;
    node = static_cast<int32_t>(next);
    if (units[node].id >= 0) on_match(i + 1, units[node].id);
  }
}

}  // namespace il::text
