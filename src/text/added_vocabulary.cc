#include "text/added_vocabulary.h"

#include <algorithm>

#include "text/models/model.h"
#include "text/normalized_string.h"
#include "text/normalizers.h"
#include "text/unicode.h"

namespace il::text {

void AddedVocabulary::Matcher::add(std::string_view pattern, int32_t id) {
  if (pattern.empty()) return;
  uint32_t node = 0;
  for (char ch : pattern) {
    const auto b = static_cast<unsigned char>(ch);
    auto& next = nodes_[node].next;
    auto it = std::lower_bound(next.begin(), next.end(), b,
                               [](const auto& e, unsigned char v) { return e.first < v; });
    if (it != next.end() && it->first == b) {
      node = it->second;
    } else {
      const auto child = static_cast<uint32_t>(nodes_.size());
      next.insert(it, {b, child});
      nodes_.emplace_back();  // may move nodes_; `next` is not used after this
      node = child;
    }
  }
  // The first of two identical patterns wins, as with the library's Aho-Corasick matcher.
  if (nodes_[node].id < 0) nodes_[node].id = id;
  first_[static_cast<unsigned char>(pattern[0])] = true;
}

std::pair<std::size_t, int32_t> AddedVocabulary::Matcher::longest_at(std::string_view text,
                                                                     std::size_t pos) const {
  std::pair<std::size_t, int32_t> best{0, -1};
  uint32_t node = 0;
  for (std::size_t i = pos; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    const auto& next = nodes_[node].next;
    auto it = std::lower_bound(next.begin(), next.end(), b,
                               [](const auto& e, unsigned char v) { return e.first < v; });
    if (it == next.end() || it->first != b) break;
    node = it->second;
    if (nodes_[node].id >= 0) best = {i + 1 - pos, nodes_[node].id};
  }
  return best;
}

void AddedVocabulary::add(const AddedToken& t, const Model& model) {
  if (t.special && !t.content.empty() && special_set_.insert(t.content).second) {
    special_tokens_.push_back(t);
  }
  if (t.content.empty()) return;
  int32_t id;
  if (auto known = token_to_id(t.content)) {
    const AddedToken& existing = by_id_.at(*known);
    if (existing.single_word == t.single_word && existing.lstrip == t.lstrip &&
        existing.rstrip == t.rstrip && existing.normalized == t.normalized &&
        existing.special == t.special) {
      return;  // already there, identical
    }
    id = *known;
  } else if (auto in_model = model.token_to_id(t.content)) {
    id = *in_model;
  } else {
    // The next id after the vocabulary and the added tokens so far.
    const auto vocab = static_cast<int32_t>(model.vocab_size());
    id = max_id_ < 0 ? vocab : (max_id_ >= vocab || vocab == 0 ? max_id_ + 1 : vocab);
  }
  max_id_ = std::max(max_id_, id);
  by_content_[t.content] = id;
  by_id_[id] = t;
  if (!special_set_.contains(t.content)) added_tokens_.push_back(t);
}

void AddedVocabulary::load(const JsonRef& list, const Model& model, const Normalizer* normalizer) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    const JsonRef j = list.at(i);
    AddedToken t;
    t.content = j["content"].as_string();
    t.single_word = j.get_bool("single_word", false);
    t.lstrip = j.get_bool("lstrip", false);
    t.rstrip = j.get_bool("rstrip", false);
    t.normalized = j.get_bool("normalized", true);
    t.special = j.get_bool("special", false);
    add(t, model);
  }
  NormalizedString scratch;
  for (auto& [id, t] : by_id_) {
    t.decoded = t.content;
    if (t.normalized && normalizer != nullptr) {
      scratch.reset(t.content, 0);
      normalizer->normalize(scratch);
      t.decoded = scratch.text();
    }
  }
  // Matchers: special tokens first, then the others, each in order of addition.
  for (const auto* group : {&special_tokens_, &added_tokens_}) {
    for (const AddedToken& t : *group) {
      const int32_t id = by_content_.at(t.content);
      if (!t.normalized) {
        raw_.add(t.content, id);
        continue;
      }
      scratch.reset(t.content, 0);
      if (normalizer != nullptr) normalizer->normalize(scratch);
      normalized_.add(scratch.text(), id);
    }
  }
}

std::optional<int32_t> AddedVocabulary::token_to_id(std::string_view content) const {
  const auto it = by_content_.find(content);
  if (it == by_content_.end()) return std::nullopt;
  return it->second;
}

const AddedToken* AddedVocabulary::token(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second;
}

bool AddedVocabulary::is_special(std::string_view content) const {
  return special_set_.find(content) != special_set_.end();
}

std::size_t AddedVocabulary::count_not_in(const Model& model) const {
  std::size_t n = 0;
  for (const auto& [content, id] : by_content_) n += !model.token_to_id(content).has_value();
  return n;
}

namespace {

// The library tests these with the regexes ^\w, \w$, ^\s* and \s*$.
bool starts_with_word(std::string_view s) {
  if (s.empty()) return false;
  std::size_t i = 0;
  return unicode::is_regex_word(unicode::decode_utf8(s, i));
}

bool ends_with_word(std::string_view s) {
  if (s.empty()) return false;
  return unicode::is_regex_word(unicode::decode_utf8_before(s, s.size(), nullptr));
}

std::size_t leading_space_end(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t at = i;
    if (!unicode::is_whitespace(unicode::decode_utf8(s, i))) return at;
  }
  return s.size();
}

std::size_t trailing_space_begin(std::string_view s) {
  std::size_t end = s.size();
  while (end > 0) {
    std::size_t b = 0;
    if (!unicode::is_whitespace(unicode::decode_utf8_before(s, end, &b))) break;
    end = b;
  }
  return end;
}

}  // namespace

void AddedVocabulary::split(std::string_view text, bool normalized_tokens,
                            std::vector<AddedSplit>& out) const {
  out.clear();
  const Matcher& m = normalized_tokens ? normalized_ : raw_;
  std::size_t done = 0;  // end of the last accepted split
  std::size_t pos = 0;   // where the search resumes
  // The last run of whitespace an rstrip token took: [spaces_from, spaces_to). Matches inside it
  // reuse it, so a long run of spaces is scanned once, not once per match in it.
  std::size_t spaces_from = 0;
  std::size_t spaces_to = 0;
  while (!m.empty() && pos < text.size()) {
    if (!m.may_start(static_cast<unsigned char>(text[pos]))) {
      ++pos;
      continue;
    }
    const auto [len, id] = m.longest_at(text, pos);
    if (len == 0) {
      ++pos;
      continue;
    }
    std::size_t start = pos;
    std::size_t stop = pos + len;
    // Like the library's non-overlapping match iterator, the search resumes after a match even
    // when the rules below discard it.
    pos = stop;
    const AddedToken& t = by_id_.at(id);
    if (t.single_word) {
      const bool start_ok = start == 0 || !ends_with_word(text.substr(0, start));
      const bool stop_ok = stop == text.size() || !starts_with_word(text.substr(stop));
      if (!start_ok || !stop_ok) continue;
    }
    if (t.lstrip) {
      // Never back past the last split (the scan stops there, so it is done once per space).
      start = start <= done ? done : done + trailing_space_begin(text.substr(done, start - done));
    }
    if (t.rstrip) {
      if (stop < spaces_from || stop > spaces_to) {
        spaces_from = stop;
        spaces_to = stop + leading_space_end(text.substr(stop));
      }
      stop = spaces_to;
    }
    // A match inside the spaces an rstrip token took (only a token starting with a space can do
    // that) would overlap it; the library would then repeat text, we start after it.
    start = std::max(start, done);
    if (done < start) out.push_back({uint32_t(done), uint32_t(start), -1});
    out.push_back({uint32_t(start), uint32_t(stop), id});
    done = stop;
  }
  if (done < text.size() || text.empty()) out.push_back({uint32_t(done), uint32_t(text.size()), -1});
}

}  // namespace il::text
