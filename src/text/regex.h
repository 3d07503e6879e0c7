// Regular expressions for tokenizer.json patterns (Split pre-tokenizers, Replace normalizers and
// decoders, the ByteLevel GPT-2 split), through PCRE2 with UTF + UCP and JIT where available.
//
// The library compiles these patterns with Oniguruma (Ruby syntax). PCRE2 reads the same syntax
// for everything real files use (\p{L}, \p{N}, (?i:...), lookahead); where the two engines
// disagree, the pattern is rewritten before compiling so that PCRE2 behaves like Oniguruma:
//   - \s and \S: Oniguruma's Unicode space is the White_Space property, PCRE2's also has U+180E;
//   - \w and \W: Oniguruma's Unicode word characters include the marks, PCRE2 10.42's do not;
//   - ^ and $ are line anchors in Ruby syntax (multi-line), before and after "\n" only.
// Matching is const and thread-safe: the match data lives in per-thread scratch space.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "text/json_util.h"

namespace il::text {

// A piece of a text cut by a pattern: byte range and whether it is a match.
struct PatternPiece {
  uint32_t begin;
  uint32_t end;
  bool is_match;
};

// Receives the pieces of a text cut by a pattern, in order.
class PieceSink {
 public:
  virtual void add(uint32_t begin, uint32_t end, bool is_match) = 0;

 protected:
  ~PieceSink() = default;
};

class Regex {
 public:
  // Compiles `pattern` (a regular expression, or with `literal` a plain string to find). Throws
  // il::Error with PCRE2's message and the offset where the pattern goes wrong; callers add the
  // field name.
  Regex(std::string_view pattern, bool literal);
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  ~Regex();

  // The library's Pattern::find_matches: `text` (valid UTF-8) cut into consecutive pieces that
  // cover it, the matches flagged, found in the order Oniguruma's find_iter reports them (an
  // empty match right where the previous match ended is skipped). Empty text gives one empty
  // non-match piece. Appends to `out`, or hands the pieces to `sink` as they are found.
  void find_matches(std::string_view text, std::vector<PatternPiece>& out) const;
  void find_matches(std::string_view text, PieceSink& sink) const;

  // The pattern as given (before any rewriting).
  const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  std::string pattern_;
  std::unique_ptr<Compiled> compiled_;
};

// The `pattern` member of Split, Replace (normalizer and decoder): {"String": "..."} (found
// literally) or {"Regex": "..."}. Errors name the field.
Regex pattern_from_json(const JsonRef& pattern);

// The rewriting described above, exposed for the tests.
std::string oniguruma_to_pcre2(std::string_view pattern);

}  // namespace il::text
