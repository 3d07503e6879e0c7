#include "text/models/unigram.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "core/error.h"
#include "text/scratch.h"
#include "text/unicode.h"

namespace il::text {
namespace {

// The library scores an unknown character this far below the worst piece.
constexpr double kUnknownPenalty = 10.0;

std::string byte_piece(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

// A score as the library reads it. serde_json (without its float_roundtrip feature) does not
// round decimals correctly: it converts the digits to a u64, that to f64 (rounding once) and
// divides by a power of ten (rounding again), so a 17-digit score can land one ulp away from the
// nearest double. Viterbi ties between segmentations then fall the library's way only with its
// exact values. The JSON text of a float is its shortest round-trip form (as JS, Python and
// serde_json write it), which std::to_chars gives back from the correctly rounded value.
double library_f64(const Json& v) {
  if (v.is_number_unsigned()) return static_cast<double>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<double>(v.get<int64_t>());
  const double d = v.get<double>();
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  if (ec != std::errc()) return d;
  const std::string_view text(buf, static_cast<std::size_t>(end - buf));
  // Significand digits (as long as they fit a u64, as serde_json keeps them) and exponent.
  std::size_t i = 0;
  const bool negative = i < text.size() && text[i] == '-';
  if (negative) ++i;
  uint64_t significand = 0;
  int exponent = 0;
  bool full = false;
  bool after_point = false;
  for (; i < text.size() && text[i] != 'e'; ++i) {
    if (text[i] == '.') {
      after_point = true;
      continue;
    }
    const auto digit = static_cast<uint64_t>(text[i] - '0');
    if (full || significand > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
      full = true;  // further digits are dropped; in the integer part they still scale
      if (!after_point) ++exponent;
      continue;
    }
    significand = significand * 10 + digit;
    if (after_point) --exponent;
  }
  if (i < text.size()) exponent += std::atoi(std::string(text.substr(i + 1)).c_str());
  // serde_json's POW10 table: the correctly rounded doubles of 1e0 .. 1e308.
  static const std::array<double, 309> pow10 = [] {
    std::array<double, 309> t{};
    for (int k = 0; k < 309; ++k) t[k] = std::strtod(("1e" + std::to_string(k)).c_str(), nullptr);
    return t;
  }();
  double f = static_cast<double>(significand);
  for (;;) {
    const int magnitude = exponent < 0 ? -exponent : exponent;
    if (magnitude < 309) {
      f = exponent >= 0 ? f * pow10[magnitude] : f / pow10[magnitude];
      break;
    }
    if (f == 0.0 || exponent >= 0) break;  // out-of-range values never reach here from JSON
    f /= 1e308;
    exponent += 308;
  }
  return negative ? -f : f;
}

// One entry of vocab: ["piece", score]. Errors are built only on the (rare) failure path, so
// reading 250k entries does not format 250k field paths.
void read_entry(const JsonRef& vocab, std::size_t index, std::string& piece, double& score) {
  const Json& e = vocab.value()[index];
  if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_number()) {
    piece = e[0].get_ref<const std::string&>();
    score = library_f64(e[1]);
    return;
  }
  const JsonRef ref = vocab.at(index);
  if (!e.is_array() || e.size() != 2) ref.fail("must be a [piece, score] pair");
  ref.at(0).as_string();
  ref.at(1).fail("must be a number (the piece's score)");
}

}  // namespace

Unigram::Unigram(const JsonRef& j) {
  j.expect_object();
  const JsonRef vocab = j["vocab"];
  const std::size_t n = vocab.size();
  if (n > (std::size_t{1} << 26)) vocab.fail("has more than 2^26 pieces");
  pieces_.resize(n);
  scores_.resize(n);
  double min_score = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < n; ++i) {
    read_entry(vocab, i, pieces_[i], scores_[i]);
    min_score = std::min(min_score, scores_[i]);
    if (pieces_[i].empty()) empty_piece_id_ = static_cast<int32_t>(i);
  }
  unk_score_ = min_score - kUnknownPenalty;
  if (const auto unk = j.find("unk_id")) {
    unk_id_ = static_cast<int32_t>(unk->as_int(0, std::numeric_limits<int32_t>::max()));
    // The library's checks, in its order.
    if (n == 0) vocab.fail("is empty, but unk_id needs at least the unknown piece");
    if (static_cast<std::size_t>(unk_id_) >= n) {
      unk->fail("is " + std::to_string(unk_id_) + ", not an index into the " +
                std::to_string(n) + " pieces of the vocabulary");
    }
  }
  byte_fallback_ = j.get_bool("byte_fallback", false);
  trie_.build(pieces_);
  for (int b = 0; b < 256; ++b) {
    byte_ids_[b] = trie_.find(byte_piece(static_cast<unsigned char>(b)));
  }
}

std::optional<int32_t> Unigram::token_to_id(std::string_view token) const {
  if (token.empty()) {
    if (empty_piece_id_ >= 0) return empty_piece_id_;
    return std::nullopt;
  }
  const int32_t id = trie_.find(token);
  if (id < 0) return std::nullopt;
  return id;
}

std::optional<std::string_view> Unigram::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= pieces_.size()) return std::nullopt;
  return std::string_view(pieces_[id]);
}

void Unigram::tokenize(std::string_view word, std::vector<ModelToken>& out) const {
  // best[e]: the best segmentation of word[0, e), through its last piece word[start, e).
  struct Best {
    double score;
    int32_t start;  // -1: not reached yet
    int32_t id;
  };
  thread_local std::vector<Best> best;
  const std::size_t n = word.size();
  best.assign(n + 1, Best{0.0, -1, -1});
  std::size_t start = 0;
  while (start < n) {
    const double here = best[start].score;
    const std::size_t char_len = unicode::utf8_length(static_cast<unsigned char>(word[start]));
    bool covers_char = false;  // some piece is exactly this character
    trie_.for_each_prefix(word.substr(start), [&](std::size_t len, int32_t id) {
      Best& b = best[start + len];
      const double score = scores_[id] + here;
      // Ties keep the earlier candidate, as the library does.
      if (b.start < 0 || score > b.score) b = {score, static_cast<int32_t>(start), id};
      covers_char |= len == char_len;
    });
    if (!covers_char) {
      Best& b = best[start + char_len];
      const double score = unk_score_ + here;
      if (b.start < 0 || score > b.score) {
        if (unk_id_ < 0) {
          // The library fails the encode here too ("unk_id is missing").
          std::size_t at = start;
          const char32_t c = unicode::decode_utf8(word, at);
          char code[16];
          std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(c));
          throw make_error("Unigram: the character ", code,
                           " is not in the vocabulary and the model has no unk_id");
        }
        b = {score, static_cast<int32_t>(start), unk_id_};
      }
    }
    start += char_len;
  }

  // Walk back from the end, each run of unknown pieces fused into one (the library's fuse_unk,
  // always on for Unigram), counting first so that every token goes straight to its place.
  const bool fuse = unk_id_ >= 0;
  std::size_t count = 0;
  bool previous_unknown = false;
  for (auto end = static_cast<uint32_t>(n); end > 0;) {
    const Best& b = best[end];
    const bool unknown = fuse && b.id == unk_id_;
    if (!(unknown && previous_unknown)) ++count;
    previous_unknown = unknown;
    end = static_cast<uint32_t>(b.start);
  }
  const std::size_t first = out.size();
  out.resize(first + count);
  std::size_t k = out.size();
  previous_unknown = false;
  for (auto end = static_cast<uint32_t>(n); end > 0;) {
    const Best& b = best[end];
    const bool unknown = fuse && b.id == unk_id_;
    if (unknown && previous_unknown) {
      out[k].begin = static_cast<uint32_t>(b.start);
    } else {
      out[--k] = {b.id, static_cast<uint32_t>(b.start), end};
    }
    previous_unknown = unknown;
    end = static_cast<uint32_t>(b.start);
  }
  release_if_large(best);
  if (!fuse) return;

  // The fused runs take their final tokens in place, unless one is spelled out byte by byte.
  bool spelled = false;
  for (std::size_t i = first; i < out.size(); ++i) {
    if (out[i].id != unk_id_) continue;
    const int32_t id = unknown_token(word.substr(out[i].begin, out[i].end - out[i].begin));
    if (id >= 0) {
      out[i].id = id;
    } else {
      spelled = true;
    }
  }
  if (!spelled) return;
  thread_local std::vector<ModelToken> pieces;
  pieces.assign(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
  out.resize(first);
  for (const ModelToken& p : pieces) {
    if (p.id != unk_id_) {
      out.push_back(p);
      continue;
    }
    const std::string_view text = word.substr(p.begin, p.end - p.begin);
    if (const int32_t id = unknown_token(text); id >= 0) {
      out.push_back({id, p.begin, p.end});
      continue;
    }
    // Every byte token spans the whole unknown text, as in the library.
    for (const char c : text) {
      out.push_back({byte_ids_[static_cast<unsigned char>(c)], p.begin, p.end});
    }
  }
  release_if_large(pieces);
}

int32_t Unigram::unknown_token(std::string_view text) const {
  // The library looks the fused text up again: it may itself be a piece.
  if (const int32_t id = trie_.find(text); id >= 0) return id;
  if (byte_fallback_) {
    const bool all_bytes = std::all_of(text.begin(), text.end(), [&](char c) {
      return byte_ids_[static_cast<unsigned char>(c)] >= 0;
    });
    if (all_bytes) return text.size() == 1 ? byte_ids_[static_cast<unsigned char>(text[0])] : -1;
  }
  return unk_id_;
}

}  // namespace il::text
