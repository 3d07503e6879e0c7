#include "text/sentencepiece.h"

#include <algorithm>
#include <cfloat>

#include "core/error.h"
#include "text/json_util.h"
#include "text/unicode.h"

namespace il::text {
namespace {

constexpr std::string_view kSpaceSymbol = "\xe2\x96\x81";  // U+2581
constexpr float kUnknownPenalty = 10.0f;

using Type = SentencePieceModel::PieceType;

bool may_match(Type t) { return t == Type::kNormal || t == Type::kUserDefined; }

// The length of the valid UTF-8 character at the front of `s`, or 0 when it is malformed.
std::size_t valid_char_length(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80) return 1;
  const std::size_t n = b0 >= 0xC2 && b0 < 0xE0 ? 2 : b0 >= 0xE0 && b0 < 0xF0 ? 3 : b0 >= 0xF0 && b0 < 0xF5 ? 4 : 0;
  if (n == 0 || n > s.size()) return 0;
  return unicode::find_invalid_utf8(s.substr(0, n)).has_value() ? 0 : n;
}

}  // namespace

SentencePieceEncoder::SentencePieceEncoder(SentencePieceModel model, const std::string& source)
    : model_(std::move(model)) {
  check(model_.model_type == SentencePieceModel::ModelType::kUnigram, source,
        ": only Unigram SentencePiece models are read (model_type ", static_cast<int>(model_.model_type), ")");
  check(!model_.byte_fallback, source, ": byte_fallback SentencePiece models are not read");
  check(!model_.treat_whitespace_as_suffix, source, ": treat_whitespace_as_suffix models are not read");
  if (!model_.precompiled_charsmap.empty()) {
    const Json none;
    charsmap_.emplace(model_.precompiled_charsmap, JsonRef(source, none, "normalizer_spec.precompiled_charsmap"));
  }
  std::vector<std::string> keys(model_.pieces.size()), user_keys(model_.pieces.size());
  float min_score = FLT_MAX;
  max_score_ = FLT_MIN;  // the library's starting value: normal scores are negative
  for (std::size_t id = 0; id < model_.pieces.size(); ++id) {
    const SentencePieceModel::Piece& p = model_.pieces[id];
    // The library keeps normal, user-defined and unused pieces in one map and the reserved ones
    // (control, unknown, byte) in another, and refuses a spelling twice within one of them ("is
    // already defined").
    const bool reserved = p.type == Type::kControl || p.type == Type::kUnknown || p.type == Type::kByte;
    const auto [at, fresh] = (reserved ? reserved_ids_ : ids_).emplace(p.text, static_cast<int32_t>(id));
    check(fresh, source, ": pieces ", at->second, " and ", id, " are both spelled \"", p.text, "\"");
    if (may_match(p.type)) keys[id] = p.text;
    if (p.type == Type::kUserDefined) user_keys[id] = p.text;
    if (p.type == Type::kNormal) {
      min_score = std::min(min_score, p.score);
      max_score_ = std::max(max_score_, p.score);
    }
  }
  check(model_.unk_id >= 0 && model_.pieces[static_cast<std::size_t>(model_.unk_id)].type == Type::kUnknown, source,
        ": the unknown id ", model_.unk_id, " is not the model's unknown piece");
  trie_.build(keys);
  user_defined_.build(user_keys);
  unk_score_ = min_score - kUnknownPenalty;
}

std::pair<std::string_view, std::size_t> SentencePieceEncoder::normalize_prefix(std::string_view text) const {
  std::size_t user = 0;  // the longest user-defined piece the text starts with
  user_defined_.for_each_prefix(text, [&](std::size_t length, int32_t) { user = length; });
  if (user > 0) return {text.substr(0, user), user};
  if (charsmap_)
    if (const auto hit = charsmap_->longest_prefix(text)) return *hit;
  const std::size_t n = valid_char_length(text);
  if (n == 0) return {"\xEF\xBF\xBD", 1};  // a malformed byte: U+FFFD, one byte consumed
  return {text.substr(0, n), n};
}

std::string SentencePieceEncoder::normalize(std::string_view text) const {
  const bool squeeze = model_.remove_extra_whitespaces;
  if (squeeze)
    while (!text.empty()) {
      const auto [out, used] = normalize_prefix(text);
      if (out != " ") break;
      text.remove_prefix(used);
    }
  std::string normalized;
  if (text.empty()) return normalized;
  const std::string_view space = model_.escape_whitespaces ? kSpaceSymbol : std::string_view(" ");
  if (model_.add_dummy_prefix) normalized += space;
  bool previous_space = squeeze;
  while (!text.empty()) {
    auto [out, used] = normalize_prefix(text);
    if (previous_space)
      while (!out.empty() && out.front() == ' ') out.remove_prefix(1);
    if (!out.empty()) {
      for (const char c : out) {
        if (c == ' ' && model_.escape_whitespaces) normalized += kSpaceSymbol;
        else normalized += c;
      }
      previous_space = out.back() == ' ';
    }
    text.remove_prefix(used);
    if (!squeeze) previous_space = false;
  }
  if (squeeze)
    while (normalized.size() >= space.size() && normalized.compare(normalized.size() - space.size(), space.size(), space) == 0)
      normalized.resize(normalized.size() - space.size());
  return normalized;
}

std::vector<int32_t> SentencePieceEncoder::encode(std::string_view text) const {
  const std::string s = normalize(text);
  struct Best {
    int32_t id = -1;
    float score = 0.0f;
    int64_t start = -1;  // -1: no path ends here yet
  };
  std::vector<Best> best(s.size() + 1);
  for (std::size_t start = 0; start < s.size();) {
    const float before = best[start].score;
    const std::size_t char_len = std::min(unicode::utf8_length(static_cast<unsigned char>(s[start])), s.size() - start);
    bool single_char_piece = false;
    trie_.for_each_prefix(std::string_view(s).substr(start), [&](std::size_t length, int32_t id) {
      const SentencePieceModel::Piece& p = model_.pieces[static_cast<std::size_t>(id)];
      // Float sums, each rounded as it is stored: equal-scoring segmentations of a long run then
      // tie or not exactly as in the library (double sums choose differently on the fixture's
      // runs of one letter). A user-defined piece gets the bonus that always selects it.
      const float score =
          p.type == Type::kUserDefined ? static_cast<float>(static_cast<double>(length) * max_score_ - 0.1) : p.score;
      Best& end = best[start + length];
      const float candidate = score + before;
      if (end.start == -1 || candidate > end.score) end = {id, candidate, static_cast<int64_t>(start)};
      if (length == char_len) single_char_piece = true;
    });
    if (!single_char_piece) {
      Best& end = best[start + char_len];
      const float candidate = unk_score_ + before;
      if (end.start == -1 || candidate > end.score) end = {model_.unk_id, candidate, static_cast<int64_t>(start)};
    }
    start += char_len;
  }
  std::vector<int32_t> ids;
  for (std::size_t end = s.size(); end > 0;) {
    const Best& b = best[end];
    ids.push_back(b.id);
    end = static_cast<std::size_t>(b.start);
  }
  std::reverse(ids.begin(), ids.end());
  // Runs of unknown characters are one unknown piece.
  std::vector<int32_t> merged;
  for (const int32_t id : ids)
    if (!(id == model_.unk_id && !merged.empty() && merged.back() == model_.unk_id)) merged.push_back(id);
  return merged;
}

std::optional<int32_t> SentencePieceEncoder::piece_id(std::string_view piece) const {
  // The reserved spelling first, as the library's PieceToId looks it up.
  const std::string key(piece);
  if (const auto it = reserved_ids_.find(key); it != reserved_ids_.end()) return it->second;
  if (const auto it = ids_.find(key); it != ids_.end()) return it->second;
  return std::nullopt;
}

}  // namespace il::text
