#include "text/models/unigram_trie.h"

#include <algorithm>
#include <numeric>

namespace il::text {
namespace {

// Places the trie into the double array, one node at a time from the sorted keys.
class Builder {
 public:
  using Unit = UnigramTrie::Unit;

  Builder(const std::vector<std::string>& keys, std::vector<int32_t> order)
      : keys_(keys), order_(std::move(order)) {}

  std::vector<Unit> run() {
    grow(1024);
    occupy(0);  // the root
    units_[0].check = 0;
    if (!order_.empty()) place(0, 0, order_.size(), 0);
    // Trailing free slots are never reached (check stays -1); drop them.
    std::size_t last = units_.size();
    while (last > 1 && units_[last - 1].check < 0) --last;
    units_.resize(last);
    return std::move(units_);
  }

 private:
  unsigned char byte_at(std::size_t k, std::size_t depth) const {
    return static_cast<unsigned char>(keys_[order_[k]][depth]);
  }

  // A node still to place: it stands for the common prefix (of `depth` bytes) of the sorted
  // keys [lo, hi).
  struct Pending {
    int32_t node;
    std::size_t lo, hi, depth;
  };

  // Places the nodes depth first, parents before children and children in byte order. The
  // pending nodes wait on a heap-allocated stack: a piece is as deep as it is long, and a file
  // may hold a piece of megabytes.
  void place(int32_t root, std::size_t lo, std::size_t hi, std::size_t depth) {
    std::vector<Pending> stack = {{root, lo, hi, depth}};
    std::vector<std::pair<unsigned char, std::size_t>> children;  // (label, first key)
    while (!stack.empty()) {
      Pending p = stack.back();
      stack.pop_back();
      if (keys_[order_[p.lo]].size() == p.depth) {
        units_[p.node].id = order_[p.lo];  // the key that is exactly this prefix (unique)
        ++p.lo;
      }
      if (p.lo == p.hi) continue;
      // The children: one per distinct next byte, each with its range of keys.
      children.clear();
      for (std::size_t k = p.lo; k < p.hi; ++k) {
        if (children.empty() || children.back().first != byte_at(k, p.depth)) {
          children.emplace_back(byte_at(k, p.depth), k);
        }
      }
      const int32_t base = find_base(children);
      units_[p.node].base = base;
      for (const auto& [label, first] : children) units_[base + label].check = p.node;
      // Pushed last first, so that they are placed in byte order.
      for (std::size_t c = children.size(); c-- > 0;) {
        const std::size_t end = c + 1 < children.size() ? children[c + 1].second : p.hi;
        stack.push_back({base + children[c].first, children[c].second, end, p.depth + 1});
      }
    }
  }

  // A base at which every child's slot is free. The candidates are the free slots, walked in
  // order through a linked list; free slots far behind the used end leave the list (they
  // stay free, unused), so the search stays short however many holes the array collects.
  int32_t find_base(const std::vector<std::pair<unsigned char, std::size_t>>& children) {
    constexpr std::size_t kWindow = 8192;
    while (free_head_ >= 0 && static_cast<std::size_t>(free_head_) + kWindow < used_end_) {
      occupy(free_head_);
    }
    const std::size_t first_label = children.front().first;
    int32_t pos = free_head_;
    for (;;) {
      if (pos < 0) {
        const auto end = static_cast<int32_t>(units_.size());
        grow(units_.size() + 256);
        pos = end;
      }
      const auto p = static_cast<std::size_t>(pos);
      if (p > first_label) {
        const std::size_t base = p - first_label;
        grow(base + 256);
        bool fits = true;
        for (std::size_t c = 1; c < children.size() && fits; ++c) {
          fits = units_[base + children[c].first].check < 0;
        }
        if (fits) {
          for (const auto& child : children) occupy(static_cast<int32_t>(base + child.first));
          used_end_ = std::max(used_end_, base + children.back().first + 1);
          return static_cast<int32_t>(base);
        }
      }
      pos = next_free_[p];
    }
  }

  // Appends free slots up to `size` to the end of the free list.
  void grow(std::size_t size) {
    if (units_.size() >= size) return;
    const std::size_t old = units_.size();
    size = std::max(size, old * 2);
    units_.resize(size);
    next_free_.resize(size, -1);
    prev_free_.resize(size, -1);
    in_list_.resize(size, 1);
    for (std::size_t i = old; i < size; ++i) {
      const auto slot = static_cast<int32_t>(i);
      prev_free_[i] = free_tail_;
      if (free_tail_ >= 0) {
        next_free_[static_cast<std::size_t>(free_tail_)] = slot;
      } else {
        free_head_ = slot;
      }
      free_tail_ = slot;
    }
  }

  // Takes a slot off the free list (the caller marks it used through its check).
  void occupy(int32_t slot) {
    const auto i = static_cast<std::size_t>(slot);
    if (!in_list_[i]) return;  // dropped from the list earlier, then used after all
    const int32_t prev = prev_free_[i];
    const int32_t next = next_free_[i];
    if (prev >= 0) {
      next_free_[static_cast<std::size_t>(prev)] = next;
    } else {
      free_head_ = next;
    }
    if (next >= 0) {
      prev_free_[static_cast<std::size_t>(next)] = prev;
    } else {
      free_tail_ = prev;
    }
    prev_free_[i] = next_free_[i] = -1;
    in_list_[i] = 0;
  }

  const std::vector<std::string>& keys_;
  std::vector<int32_t> order_;  // key ids sorted by their bytes
  std::vector<Unit> units_;
  std::vector<int32_t> next_free_, prev_free_;  // the free list, -1 ends it
  std::vector<uint8_t> in_list_;
  int32_t free_head_ = -1;
  int32_t free_tail_ = -1;
  std::size_t used_end_ = 1;  // one past the highest slot in use
};

}  // namespace

void UnigramTrie::build(const std::vector<std::string>& keys) {
  std::vector<int32_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0);
  // std::string compares bytes as unsigned char, which is the order the children need.
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return keys[a] < keys[b]; });
  // Equal keys: keep the last id (the stable sort leaves it last in its run); drop empty keys.
  std::vector<int32_t> unique;
  unique.reserve(order.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (keys[order[k]].empty()) continue;
    if (k + 1 < order.size() && keys[order[k + 1]] == keys[order[k]]) continue;
    unique.push_back(order[k]);
  }
  units_ = Builder(keys, std::move(unique)).run();
}

int32_t UnigramTrie::find(std::string_view key) const {
  if (key.empty()) return -1;
  int32_t found = -1;
  for_each_prefix(key, [&](std::size_t length, int32_t id) {
    if (length == key.size()) found = id;
  });
  return found;
}

}  // namespace il::text
