#include "text/models/wordpiece.h"

#include "core/error.h"
#include "text/unicode.h"

namespace il::text {

WordPiece::WordPiece(const JsonRef& j)
    : unk_token_(j.get_string("unk_token", "[UNK]")),
      prefix_(j.get_string("continuing_subword_prefix", "##")),
      max_input_chars_per_word_(static_cast<std::size_t>(
          j.get_int("max_input_chars_per_word", 100, 0, int64_t{1} << 40))) {
  vocab_.load(j["vocab"]);
  unk_id_ = vocab_.find(unk_token_);
}

int32_t WordPiece::unk_id(std::size_t word_bytes) const {
  // The library fails the encode (not the load) when it needs a missing unknown token.
  if (!unk_id_) {
    throw make_error("WordPiece: the unknown token \"", unk_token_,
                     "\" is not in the vocabulary, but a word of ", word_bytes,
                     " bytes has no tokenization without it");
  }
  return *unk_id_;
}

void WordPiece::tokenize(std::string_view word, std::vector<ModelToken>& out) const {
  const auto n = static_cast<uint32_t>(word.size());
  if (unicode::count_chars(word) > max_input_chars_per_word_) {
    out.push_back({unk_id(n), 0, n});
    return;
  }
  thread_local std::string key;
  const std::size_t first = out.size();
  std::size_t start = 0;
  while (start < word.size()) {
    // Candidates longer than the longest vocabulary entry cannot match: start below that
    // (on a character boundary), which gives the same greedy result as starting at the end.
    const std::size_t room = vocab_.max_token_bytes();
    std::size_t end = word.size();
    if (end - start > room) {
      end = start + room;
      while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80) --end;
    }
    bool found = false;
    while (start < end) {
      std::string_view candidate = word.substr(start, end - start);
      if (start > 0) {
        key.assign(prefix_);
        key.append(candidate);
        candidate = key;
      }
      if (const auto id = vocab_.find(candidate)) {
        out.push_back({*id, static_cast<uint32_t>(start), static_cast<uint32_t>(end)});
        found = true;
        break;
      }
      std::size_t prev = end;
      unicode::decode_utf8_before(word, end, &prev);
      end = prev;
    }
    if (!found) {
      // No tokenization: the whole word is the unknown token.
      out.resize(first);
      out.push_back({unk_id(n), 0, n});
      return;
    }
    start = end;
  }
}

}  // namespace il::text
