#include "text/models/bpe.h"

#include <algorithm>
#include <cstdio>
#include <functional>

#include "core/error.h"
#include "text/scratch.h"
#include "text/unicode.h"

namespace il::text {

// ---- MergeTable ----

void Bpe::MergeTable::reserve(std::size_t n) {
  std::size_t cap = 16;
  shift_ = 60;
  while (cap < 2 * n) {
    cap *= 2;
    --shift_;
  }
  keys_.assign(cap, kEmpty);
  values_.assign(cap, Merge{});
  size_ = 0;
}

void Bpe::MergeTable::insert(int32_t left, int32_t right, Merge m) {
  if (2 * (size_ + 1) > keys_.size()) {
    // Grow: re-insert everything into a table twice the size.
    std::vector<uint64_t> old_keys;
    std::vector<Merge> old_values;
    old_keys.swap(keys_);
    old_values.swap(values_);
    reserve(std::max<std::size_t>(old_keys.size(), 8));
    for (std::size_t i = 0; i < old_keys.size(); ++i) {
      if (old_keys[i] != kEmpty) {
        insert(static_cast<int32_t>(old_keys[i] >> 32), static_cast<int32_t>(old_keys[i]),
               old_values[i]);
      }
    }
  }
  const uint64_t k = key(left, right);
  const std::size_t mask = keys_.size() - 1;
  for (std::size_t s = slot(k);; s = (s + 1) & mask) {
    if (keys_[s] == kEmpty) {
      keys_[s] = k;
      values_[s] = m;
      ++size_;
      return;
    }
    if (keys_[s] == k) {
      values_[s] = m;
      return;
    }
  }
}

const Bpe::Merge* Bpe::MergeTable::find(int32_t left, int32_t right) const {
  if (size_ == 0) return nullptr;
  const uint64_t k = key(left, right);
  const std::size_t mask = keys_.size() - 1;
  for (std::size_t s = slot(k);; s = (s + 1) & mask) {
    if (keys_[s] == k) return &values_[s];
    if (keys_[s] == kEmpty) return nullptr;
  }
}

// ---- TokenIndex ----

namespace {

uint64_t hash_token(std::string_view s) { return std::hash<std::string_view>{}(s); }

}  // namespace

void Bpe::TokenIndex::build(const JsonRef& vocab_json, const Vocab& vocab) {
  vocab_ = &vocab;
  const std::size_t n = vocab.size();
  std::size_t cap = 16;
  shift_ = 60;
  while (cap < 2 * n) {
    cap *= 2;
    --shift_;
  }
  slots_.assign(cap, Slot{0, -1});
  complete_ = true;
  const std::size_t mask = cap - 1;
  for (const auto& [token, id_json] : vocab_json.value().items()) {
    const auto id = id_json.get<int32_t>();  // range-checked by Vocab::load
    // The slot's string is read back through the vocabulary's reverse table, which holds one
    // token per id.
    if (vocab.token(id) != std::string_view(token)) {
      complete_ = false;
      slots_.clear();
      return;
    }
    const uint64_t h = hash_token(token);
    for (std::size_t s = (h * 0x9E3779B97F4A7C15ull) >> shift_;; s = (s + 1) & mask) {
      if (slots_[s].id < 0) {
        slots_[s] = {static_cast<uint32_t>(h >> 32), id};
        break;
      }
    }
  }
}

int32_t Bpe::TokenIndex::find(std::string_view token) const {
  if (!complete_) return vocab_->find(token).value_or(-1);
  const uint64_t h = hash_token(token);
  const auto tag = static_cast<uint32_t>(h >> 32);
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t s = (h * 0x9E3779B97F4A7C15ull) >> shift_;; s = (s + 1) & mask) {
    const Slot& slot = slots_[s];
    if (slot.id < 0) return -1;
    if (slot.tag == tag && *vocab_->token(slot.id) == token) return slot.id;
  }
}

// ---- loading ----

Bpe::Bpe(const JsonRef& j) {
  if (const auto dropout = j.find("dropout")) {
    if (!dropout->value().is_number()) dropout->fail("must be a number or null");
    const double p = dropout->value().get<double>();
    if (p != 0.0) {
      dropout->fail("is " + dropout->value().dump() +
                    ": BPE dropout is random at every encode and is not supported (use null or 0)");
    }
  }
  if (const auto unk = j.find("unk_token")) unk_token_ = unk->as_string();
  prefix_ = j.get_string("continuing_subword_prefix", "");
  suffix_ = j.get_string("end_of_word_suffix", "");
  fuse_unk_ = j.get_bool("fuse_unk", false);
  byte_fallback_ = j.get_bool("byte_fallback", false);
  ignore_merges_ = j.get_bool("ignore_merges", false);

  vocab_.load(j["vocab"]);
  index_.build(j["vocab"], vocab_);
  if (unk_token_) unk_id_ = vocab_.find(*unk_token_);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byte_ids_[b] = index_.find(name);
  }
  if (prefix_.empty() && suffix_.empty()) {
    small_char_ids_.assign(0x800, -1);
    std::string ch;
    for (char32_t c = 0; c < 0x800; ++c) {
      ch.clear();
      unicode::append_utf8(ch, c);
      small_char_ids_[c] = index_.find(ch);
    }
  }
  load_merges(j["merges"]);
}

void Bpe::load_merges(const JsonRef& merges) {
  merges.expect_array();
  const Json& list = merges.value();
  merges_.reserve(list.size());
  std::string merged;
  uint32_t rank = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Json& m = list[i];
    std::string_view a;
    std::string_view b;
    if (m.is_string()) {
      // "a b": exactly one space; merges files may start with a "#version" line.
      const std::string& line = m.get_ref<const std::string&>();
      if (line.starts_with("#version")) continue;
      const std::size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
        merges.at(i).fail("must be two tokens separated by one space, not \"" + line + "\"");
      }
      a = std::string_view(line).substr(0, space);
      b = std::string_view(line).substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get_ref<const std::string&>();
      b = m[1].get_ref<const std::string&>();
    } else {
      merges.at(i).fail("must be a string \"a b\" or a pair [\"a\", \"b\"]");
    }
    const int32_t a_id = index_.find(a);
    const int32_t b_id = index_.find(b);
    if (a_id < 0 || b_id < 0) {
      merges.at(i).fail("uses the token \"" + std::string(a_id >= 0 ? b : a) +
                        "\", which is not in model.vocab");
    }
    // The merged token drops the right side's continuing-subword prefix.
    if (b.size() < prefix_.size()) {
      merges.at(i).fail("has a right side shorter than continuing_subword_prefix");
    }
    merged.assign(a);
    merged.append(b.substr(prefix_.size()));
    const int32_t new_id = index_.find(merged);
    if (new_id < 0) {
      merges.at(i).fail("makes the token \"" + merged + "\", which is not in model.vocab");
    }
    merges_.insert(a_id, b_id, Merge{rank++, new_id});
  }
}

// ---- tokenizing ----

int32_t Bpe::char_id(std::string_view ch, bool first, bool last, std::string& scratch) const {
  const bool plain = (first || prefix_.empty()) && (!last || suffix_.empty());
  if (plain) {
    if (!small_char_ids_.empty()) {
      std::size_t i = 0;
      const char32_t c = unicode::decode_utf8(ch, i);
      if (c < small_char_ids_.size()) return small_char_ids_[c];
    }
    return index_.find(ch);
  }
  scratch.clear();
  if (!first) scratch += prefix_;
  scratch += ch;
  if (last) scratch += suffix_;
  return index_.find(scratch);
}

int32_t Bpe::unk_id(std::string_view word) const {
  // Like the library, a missing unknown token fails the encode that needs it, not the load.
  if (!unk_id_) {
    throw make_error("BPE: the unknown token \"", *unk_token_,
                     "\" is not in the vocabulary, but a word of ", word.size(),
                     " bytes has a character without a token");
  }
  return *unk_id_;
}

void Bpe::initial_symbols(std::string_view word, std::vector<Symbol>& symbols) const {
  symbols.clear();
  auto add = [&symbols](int32_t id, std::size_t len) {
    const auto n = static_cast<int32_t>(symbols.size());
    if (n > 0) symbols.back().next = n;
    symbols.push_back({id, n - 1, -1, static_cast<uint32_t>(len)});
  };
  thread_local std::string scratch;
  // A pending unknown token: several in a row become one with fuse_unk.
  int32_t unk = -1;
  std::size_t unk_len = 0;
  std::size_t i = 0;
  while (i < word.size()) {
    const std::size_t at = i;
    i += unicode::utf8_length(static_cast<unsigned char>(word[i]));
    const std::string_view ch = word.substr(at, i - at);
    const bool first = at == 0;
    const bool last = i >= word.size();
    if (const int32_t id = char_id(ch, first, last, scratch); id >= 0) {
      if (unk >= 0) {
        add(unk, unk_len);
        unk = -1;
      }
      add(id, ch.size());
      continue;
    }
    if (byte_fallback_) {
      // Every byte of the character as the library spells it (prefix and suffix included) must
      // have its "<0xAB>" token; the pending unknown token, if any, stays pending.
      scratch.clear();
      if (!first) scratch += prefix_;
      scratch += ch;
      if (last) scratch += suffix_;
      const bool all = std::all_of(scratch.begin(), scratch.end(), [this](char c) {
        return byte_ids_[static_cast<unsigned char>(c)] >= 0;
      });
      if (all) {
        for (const char c : scratch) add(byte_ids_[static_cast<unsigned char>(c)], 1);
        continue;
      }
    }
    if (!unk_token_) continue;  // no unknown token: the character is dropped, as in the library
    if (unk >= 0 && fuse_unk_) {
      unk_len += ch.size();
      continue;
    }
    if (unk >= 0) add(unk, unk_len);
    unk = unk_id(word);
    unk_len = ch.size();
  }
  if (unk >= 0) add(unk, unk_len);
}

void Bpe::merge_all(std::vector<Symbol>& symbols) const {
  struct Candidate {
    uint32_t rank;
    uint32_t pos;
    int32_t new_id;
  };
  // std::push_heap keeps the greatest first: "greater" here is the lower rank, then the lower
  // position, as in the library's queue.
  auto later = [](const Candidate& x, const Candidate& y) {
    return x.rank != y.rank ? x.rank > y.rank : x.pos > y.pos;
  };
  thread_local std::vector<Candidate> queue;
  queue.clear();
  // Room for every adjacent pair: the queue then grows at most once more, by the merges that
  // make new pairs.
  queue.reserve(symbols.size());
  for (std::size_t k = 0; k + 1 < symbols.size(); ++k) {
    if (const Merge* m = merges_.find(symbols[k].id, symbols[k + 1].id)) {
      queue.push_back({m->rank, static_cast<uint32_t>(k), m->new_id});
    }
  }
  std::make_heap(queue.begin(), queue.end(), later);
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), later);
    const Candidate top = queue.back();
    queue.pop_back();
    Symbol& left = symbols[top.pos];
    if (left.len == 0 || left.next < 0) continue;
    const Symbol right = symbols[static_cast<std::size_t>(left.next)];
    // A stale entry: the pair at this position changed since it was queued. Like the library,
    // only the merged token is compared.
    const Merge* now = merges_.find(left.id, right.id);
    if (now == nullptr || now->new_id != top.new_id) continue;
    symbols[static_cast<std::size_t>(left.next)].len = 0;
    left.id = top.new_id;
    left.len += right.len;
    left.next = right.next;
    if (right.next >= 0) {
      symbols[static_cast<std::size_t>(right.next)].prev = static_cast<int32_t>(top.pos);
    }
    if (left.prev >= 0) {
      const Symbol& p = symbols[static_cast<std::size_t>(left.prev)];
      if (const Merge* m = merges_.find(p.id, left.id)) {
        queue.push_back({m->rank, static_cast<uint32_t>(left.prev), m->new_id});
        std::push_heap(queue.begin(), queue.end(), later);
      }
    }
    if (left.next >= 0) {
      const Symbol& n = symbols[static_cast<std::size_t>(left.next)];
      if (const Merge* m = merges_.find(left.id, n.id)) {
        queue.push_back({m->rank, top.pos, m->new_id});
        std::push_heap(queue.begin(), queue.end(), later);
      }
    }
  }
  release_if_large(queue);
}

void Bpe::tokenize(std::string_view word, std::vector<ModelToken>& out) const {
  if (word.empty()) return;
  const auto n = static_cast<uint32_t>(word.size());
  if (ignore_merges_) {
    if (const int32_t id = index_.find(word); id >= 0) {
      out.push_back({id, 0, n});
      return;
    }
  }
  thread_local std::vector<Symbol> symbols;
  initial_symbols(word, symbols);
  if (symbols.size() > 1 && merges_.size() > 0) merge_all(symbols);
  uint32_t pos = 0;
  for (const Symbol& s : symbols) {
    if (s.len == 0) continue;
    // Byte-fallback tokens of a prefix or suffix cover bytes the word does not have: the
    // offsets stop at its end.
    const uint32_t begin = std::min(pos, n);
    pos += s.len;
    out.push_back({s.id, begin, std::min(pos, n)});
  }
  release_if_large(symbols);
}

}  // namespace il::text
