#include "text/decoders.h"

#include <string_view>

#include "text/byte_level.h"
#include "text/metaspace.h"
#include "text/regex.h"
#include "text/unicode.h"

namespace il::text {
namespace {

// Rust's str::replace: into a new string, so that a long text with many matches costs its length,
// not its length times the matches. An empty `from` matches at every character boundary, the
// start and the end included.
void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) {
    if (to.empty()) return;
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
      out += to;
      const std::size_t n = unicode::utf8_length(static_cast<unsigned char>(s[i]));
      out.append(s, i, n);
      i += n;
    }
    out += to;
    s.swap(out);
    return;
  }
  std::size_t pos = s.find(from);
  if (pos == std::string::npos) return;
  std::string out;
  out.reserve(s.size());
  std::size_t done = 0;
  for (; pos != std::string::npos; pos = s.find(from, done)) {
    out.append(s, done, pos - done);
    out += to;
    done = pos + from.size();
  }
  out.append(s, done);
  s.swap(out);
}

class WordPieceDecoder final : public Decoder {
 public:
  explicit WordPieceDecoder(const JsonRef& j)
      : prefix_(j.get_string("prefix", "##")), cleanup_(j.get_bool("cleanup", true)) {}

  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (t.starts_with(prefix_)) {
          t.erase(0, prefix_.size());
        } else {
          t.insert(t.begin(), ' ');
        }
      }
      if (cleanup_) cleanup(t);
    }
  }

 private:
  // The library's clean-up of tokenization spaces, in its order.
  static void cleanup(std::string& s) {
    replace_all(s, " .", ".");
    replace_all(s, " ?", "?");
    replace_all(s, " !", "!");
    replace_all(s, " ,", ",");
    replace_all(s, " ' ", "'");
    replace_all(s, " n't", "n't");
    replace_all(s, " 'm", "'m");
    replace_all(s, " do not", " don't");
    replace_all(s, " 's", "'s");
    replace_all(s, " 've", "'ve");
    replace_all(s, " 're", "'re");
  }

  std::string prefix_;
  bool cleanup_;
};

// Byte-level characters back to bytes, all tokens at once (a character may be split between
// tokens); a token with a character outside the alphabet contributes its own UTF-8. Invalid
// UTF-8 in the result becomes U+FFFD.
class ByteLevelDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      const std::size_t start = bytes.size();
      std::size_t i = 0;
      while (i < t.size()) {
        const int b = byte_level::byte_of_char(unicode::decode_utf8(t, i));
        if (b < 0) {
          bytes.resize(start);
          bytes += t;
          break;
        }
        bytes += static_cast<char>(b);
      }
    }
    std::string text;
    byte_level::append_utf8_lossy(text, bytes);
    tokens.assign(1, std::move(text));
  }
};

// Runs of "<0xAB>" tokens back to the bytes they stand for: a run that is valid UTF-8 becomes
// one token, otherwise every byte of it becomes U+FFFD.
class ByteFallbackDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string run;
    auto flush = [&] {
      if (run.empty()) return;
      if (unicode::find_invalid_utf8(run)) {
        out.insert(out.end(), run.size(), "\xEF\xBF\xBD");
      } else {
        out.push_back(run);
      }
      run.clear();
    };
    for (std::string& t : tokens) {
      if (const int b = byte_token(t); b >= 0) {
        run += static_cast<char>(b);
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    tokens.swap(out);
  }

 private:
  // The byte of a "<0xAB>" token (hex digits of either case; Rust's integer parser also takes a
  // "+" sign before a single digit), or -1.
  static int byte_token(std::string_view t) {
    if (t.size() != 6 || !t.starts_with("<0x") || t.back() != '>') return -1;
    auto hex = [](char c) {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    const int hi = t[3] == '+' ? 0 : hex(t[3]);
    const int lo = hex(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
  }
};

class FuseDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

// Removes up to `start` leading and `stop` trailing `content` characters from every token.
class StripDecoder final : public Decoder {
 public:
  explicit StripDecoder(const JsonRef& j)
      : start_(static_cast<std::size_t>(j["start"].as_int(0, int64_t{1} << 40))),
        stop_(static_cast<std::size_t>(j["stop"].as_int(0, int64_t{1} << 40))) {
    const JsonRef content = j["content"];
    const std::string c = content.as_string();
    std::size_t i = 0;
    if (c.empty() || (content_ = unicode::decode_utf8(c, i), i != c.size())) {
      content.fail("must be a single character");
    }
  }

  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      std::size_t begin = 0;
      std::size_t stripped = 0;
      for (std::size_t i = 0; stripped < start_ && i < t.size(); ++stripped) {
        if (unicode::decode_utf8(t, i) != content_) break;
        begin = i;
      }
      // The end is stripped only within what the start left.
      std::size_t end = t.size();
      for (std::size_t k = 0; k < stop_ && end > begin; ++k) {
        std::size_t prev = end;
        if (unicode::decode_utf8_before(t, end, &prev) != content_) break;
        end = prev;
      }
      t = t.substr(begin, end - begin);
    }
  }

 private:
  std::size_t start_;
  std::size_t stop_;
  char32_t content_ = 0;
};

// Replaces every match of a pattern in each token by `content` (no group references).
class ReplaceDecoder final : public Decoder {
 public:
  explicit ReplaceDecoder(const JsonRef& j)
      : regex_(pattern_from_json(j["pattern"])), content_(j["content"].as_string()) {}

  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<PatternPiece> pieces;
    for (std::string& t : tokens) {
      pieces.clear();
      regex_.find_matches(t, pieces);
      std::string out;
      for (const PatternPiece& p : pieces) {
        if (p.is_match) {
          out += content_;
        } else {
          out.append(t, p.begin, p.end - p.begin);
        }
      }
      t.swap(out);
    }
  }

 private:
  Regex regex_;
  std::string content_;
};

// The BPE model's end-of-word suffix back to spaces (none after the last token).
class BpeDecoder final : public Decoder {
 public:
  explicit BpeDecoder(const JsonRef& j) : suffix_(j.get_string("suffix", "</w>")) {}

  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      replace_all(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
    }
  }

 private:
  std::string suffix_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(const JsonRef& j) {
    const JsonRef list = j["decoders"];
    for (std::size_t i = 0; i < list.size(); ++i) parts_.push_back(make_decoder(list.at(i)));
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& d : parts_) d->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const JsonRef& j) {
  const std::string t = j.type({"WordPiece", "ByteLevel", "ByteFallback", "Fuse", "Strip",
                                "Replace", "BPEDecoder", "Metaspace", "Sequence"});
  if (t == "WordPiece") return std::make_unique<WordPieceDecoder>(j);
  if (t == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (t == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (t == "Fuse") return std::make_unique<FuseDecoder>();
  if (t == "Strip") return std::make_unique<StripDecoder>(j);
  if (t == "Replace") return std::make_unique<ReplaceDecoder>(j);
  if (t == "BPEDecoder") return std::make_unique<BpeDecoder>(j);
  if (t == "Metaspace") return make_metaspace_decoder(j);
  return std::make_unique<SequenceDecoder>(j);
}

}  // namespace il::text
