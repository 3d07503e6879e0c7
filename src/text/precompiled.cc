#include "text/precompiled.h"

#include <utf8proc.h>

#include "core/base64.h"
#include "core/error.h"
#include "text/scratch.h"
#include "text/unicode.h"

namespace il::text {

// ---- the double array ----

namespace {

// The fields of a Darts-clone unit.
bool has_leaf(uint32_t u) { return ((u >> 8) & 1) != 0; }
uint32_t value(uint32_t u) { return u & 0x7FFFFFFFu; }
uint32_t label(uint32_t u) { return u & 0x800000FFu; }
std::size_t offset(uint32_t u) {
  return static_cast<std::size_t>(u >> 10) << ((u & (1u << 9)) >> 6);
}

uint32_t read_le32(std::string_view b, std::size_t at) {
  return static_cast<uint32_t>(static_cast<unsigned char>(b[at])) |
         static_cast<uint32_t>(static_cast<unsigned char>(b[at + 1])) << 8 |
         static_cast<uint32_t>(static_cast<unsigned char>(b[at + 2])) << 16 |
         static_cast<uint32_t>(static_cast<unsigned char>(b[at + 3])) << 24;
}

}  // namespace

PrecompiledCharsmap::PrecompiledCharsmap(std::string_view blob, const JsonRef& field) {
  if (blob.size() < 4) field.fail("cannot be parsed: shorter than its 4-byte header");
  const uint32_t array_bytes = read_le32(blob, 0);
  // The library reads array_bytes / 4 units; any remainder belongs to the strings.
  const std::size_t n_units = array_bytes / 4;
  if (4 + 4 * n_units > blob.size()) {
    field.fail("cannot be parsed: its header announces a " + std::to_string(array_bytes) +
               "-byte array but only " + std::to_string(blob.size() - 4) + " bytes follow");
  }
  units_.resize(n_units);
  for (std::size_t i = 0; i < n_units; ++i) units_[i] = read_le32(blob, 4 + 4 * i);
  replacements_.assign(blob.substr(4 + 4 * n_units));
  if (const auto bad = unicode::find_invalid_utf8(replacements_)) {
    field.fail("cannot be parsed: its replacement strings are not valid UTF-8 (byte " +
               std::to_string(*bad) + " of " + std::to_string(replacements_.size()) + ")");
  }
  for (int b = 1; b < 256; ++b) {
    // A malformed array may point anywhere; such bytes take the slow path, where transform()
    // reports the problem.
    if (units_.empty()) {
      starts_[b] = true;
      continue;
    }
    const std::size_t node = offset(units_[0]) ^ static_cast<std::size_t>(b);
    starts_[b] = node >= units_.size() || label(units_[node]) == static_cast<uint32_t>(b);
  }
}

uint32_t PrecompiledCharsmap::unit(std::size_t index) const {
  if (index >= units_.size()) {
    throw make_error("Precompiled: the precompiled_charsmap is malformed (its double array of ",
                     units_.size(), " units refers to unit ", index, ")");
  }
  return units_[index];
}

std::optional<std::string_view> PrecompiledCharsmap::transform(std::string_view text) const {
  std::size_t node = offset(unit(0));
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0) return std::nullopt;  // keys never contain NUL
    node ^= c;
    const uint32_t u = unit(node);
    if (label(u) != c) return std::nullopt;
    node ^= offset(u);
    if (has_leaf(u)) {
      // The first (shortest) key found is the one used.
      const std::size_t at = value(unit(node));
      const bool boundary = at == replacements_.size() ||
                            (at < replacements_.size() &&
                             (static_cast<unsigned char>(replacements_[at]) & 0xC0) != 0x80);
      if (!boundary) {
        throw make_error("Precompiled: the precompiled_charsmap is malformed (a replacement "
                         "starts at byte ", at, " of ", replacements_.size(),
                         ", which is not the start of a character)");
      }
      const std::size_t end = replacements_.find('\0', at);
      return std::string_view(replacements_)
          .substr(at, (end == std::string::npos ? replacements_.size() : end) - at);
    }
  }
  return std::nullopt;
}

std::optional<std::pair<std::string_view, std::size_t>> PrecompiledCharsmap::longest_prefix(
    std::string_view text) const {
  if (units_.empty()) return std::nullopt;
  std::optional<std::pair<std::string_view, std::size_t>> best;
  std::size_t node = offset(unit(0));
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0) break;
    node ^= c;
    const uint32_t u = unit(node);
    if (label(u) != c) break;
    node ^= offset(u);
    if (has_leaf(u)) {
      const std::size_t at = value(unit(node));
      if (at > replacements_.size())
        throw make_error("Precompiled: the precompiled_charsmap is malformed (a replacement starts at byte ", at,
                         " of ", replacements_.size(), ")");
      const std::size_t end = replacements_.find('\0', at);
      best.emplace(std::string_view(replacements_).substr(at, (end == std::string::npos ? replacements_.size() : end) - at),
                   i + 1);
    }
  }
  return best;
}

// ---- the normalizer ----

namespace {

class Precompiled final : public Normalizer {
 public:
  Precompiled(std::string_view blob, const JsonRef& field) : map_(blob, field) {}

  void normalize(NormalizedString& s) const override {
    const std::string& text = s.text();
    bool may_change = false;
    for (const char c : text) {
      if (map_.may_start_with(static_cast<unsigned char>(c))) {
        may_change = true;
        break;
      }
    }
    if (!may_change) return;
    thread_local std::vector<Edit> edits;
    edits.clear();
    if (!plan_edits(text, edits)) {
      release_if_large(edits);
      return;
    }
    NormalizedString::Rewriter w(s);
    for (const Edit& e : edits) {
      // Each grapheme's edits consume exactly its characters, so a replacement never runs past
      // the end; the check keeps a malformed charsmap from reading out of bounds.
      if (e.change > 0 || w.at_end()) {
        w.insert(e.c);
        continue;
      }
      w.replace(e.c);
      if (e.change < 0) w.skip(static_cast<std::size_t>(-e.change));
    }
    w.finish();
    release_if_large(edits);
  }

 private:
  // One character of the new text, with the library's change marker for transform(): 0 takes
  // the place of the next source character, > 0 is inserted, -n takes the place of the next
  // source character and drops n more.
  struct Edit {
    char32_t c;
    int change;
  };

  // The library's per-grapheme rule: a grapheme shorter than 6 bytes that has a replacement (of
  // its shortest mapped prefix) is replaced whole; otherwise each of its characters is replaced
  // on its own or kept. The library marks a replacement's characters as taking the places of
  // the old ones in order; when the replacement is longer its last extra characters count as
  // inserted, when shorter its last character also drops the rest -- and an empty replacement
  // puts that drop on whatever character was planned last, even one of an earlier grapheme.
  // Offsets read through these alignments, so we plan exactly the same. Returns false when
  // nothing changes.
  bool plan_edits(std::string_view text, std::vector<Edit>& edits) const {
    bool modified = false;
    auto emit = [&](std::string_view old_part, std::string_view replacement) {
      modified = true;
      const int diff = static_cast<int>(unicode::count_chars(replacement)) -
                       static_cast<int>(unicode::count_chars(old_part));
      std::size_t i = 0;
      while (i < replacement.size()) edits.push_back({unicode::decode_utf8(replacement, i), 0});
      if (diff > 0) {
        for (std::size_t k = edits.size() - static_cast<std::size_t>(diff); k < edits.size(); ++k) {
          edits[k].change = 1;
        }
      } else if (diff < 0 && !edits.empty()) {
        edits.back().change += diff;
      }
    };
    std::size_t i = 0;
    while (i < text.size()) {
      const std::size_t begin = i;
      const std::size_t end = grapheme_end(text, begin);
      i = end;
      const std::string_view grapheme = text.substr(begin, end - begin);
      if (grapheme.size() < 6) {
        if (const auto r = map_.transform(grapheme)) {
          emit(grapheme, *r);
          continue;
        }
      }
      std::size_t k = 0;
      while (k < grapheme.size()) {
        const std::size_t at = k;
        const char32_t c = unicode::decode_utf8(grapheme, k);
        const std::string_view part = grapheme.substr(at, k - at);
        if (const auto r = map_.transform(part)) {
          emit(part, *r);
        } else {
          edits.push_back({c, 0});
        }
      }
    }
    return modified;
  }

  // End of the extended grapheme cluster (UAX #29) that starts at `begin`.
  static std::size_t grapheme_end(std::string_view text, std::size_t begin) {
    // An ASCII character other than CR followed by ASCII (or the end) stands alone.
    const auto is_ascii = [&](std::size_t at) {
      return static_cast<unsigned char>(text[at]) < 0x80;
    };
    if (is_ascii(begin) && text[begin] != '\r' &&
        (begin + 1 == text.size() || is_ascii(begin + 1))) {
      return begin + 1;
    }
    std::size_t i = begin;
    auto prev = static_cast<utf8proc_int32_t>(unicode::decode_utf8(text, i));
    utf8proc_int32_t state = 0;
    while (i < text.size()) {
      std::size_t next = i;
      const auto c = static_cast<utf8proc_int32_t>(unicode::decode_utf8(text, next));
      if (utf8proc_grapheme_break_stateful(prev, c, &state)) break;
      prev = c;
      i = next;
    }
    return i;
  }

  PrecompiledCharsmap map_;
};

}  // namespace

std::unique_ptr<Normalizer> make_precompiled_normalizer(const JsonRef& j) {
  const JsonRef field = j["precompiled_charsmap"];
  const auto blob = decode_base64(field.as_string());
  if (!blob) field.fail("is not valid base64");
  return std::make_unique<Precompiled>(*blob, field);
}

}  // namespace il::text
