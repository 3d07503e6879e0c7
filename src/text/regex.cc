#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/regex.h"

#include <pcre2.h>

#include "core/error.h"
#include "text/unicode.h"

namespace il::text {
namespace {

// Oniguruma's Unicode \s: the White_Space characters (PCRE2's \s adds U+180E).
constexpr std::string_view kSpaceSet =
    "\\x{9}-\\x{d}\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}"
    "\\x{205f}\\x{3000}";
// Oniguruma's Unicode \w: letters, marks, decimal digits, connector punctuation.
constexpr std::string_view kWordSet = "\\p{L}\\p{M}\\p{Nd}\\p{Pc}";
// Oniguruma's \h is a hexadecimal digit (PCRE2's is horizontal space).
constexpr std::string_view kHexSet = "0-9a-fA-F";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  const int n = pcre2_get_error_message(code, buf, sizeof buf);
  return n < 0 ? "PCRE2 error " + std::to_string(code) : std::string(reinterpret_cast<char*>(buf));
}

// Per-thread match state shared by every pattern: match data (the whole-match offsets are all we
// read) and a JIT stack larger than the default 32 KiB, for long runs under lookahead.
struct MatchScratch {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
  MatchScratch() {
    if (data == nullptr || context == nullptr) throw make_error("regex: out of memory");
    if (jit_stack != nullptr) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~MatchScratch() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
  MatchScratch(const MatchScratch&) = delete;
  MatchScratch& operator=(const MatchScratch&) = delete;
};

MatchScratch& scratch() {
  thread_local MatchScratch s;
  return s;
}

}  // namespace

std::string oniguruma_to_pcre2(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  int class_depth = 0;
  bool class_start = false;  // just after "[" or "[^": a "]" here is a literal
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    const bool at_class_start = class_start;
    class_start = false;
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[++i];
      const bool in_class = class_depth > 0;
      auto set = [&](std::string_view items, bool negated) {
        if (in_class) {
          out += items;
        } else {
          out += negated ? "[^" : "[";
          out += items;
          out += ']';
        }
      };
      // Negated sets cannot be spliced into a class; there the PCRE2 escape stays (it differs
      // from Oniguruma's only on the characters listed above).
      if (e == 's') {
        set(kSpaceSet, false);
      } else if (e == 'S' && !in_class) {
        set(kSpaceSet, true);
      } else if (e == 'w') {
        set(kWordSet, false);
      } else if (e == 'W' && !in_class) {
        set(kWordSet, true);
      } else if (e == 'h') {
        set(kHexSet, false);
      } else if (e == 'H' && !in_class) {
        set(kHexSet, true);
      } else {
        out += '\\';
        out += e;
      }
      continue;
    }
    if (c == '[') {
      if (class_depth > 0 && i + 1 < p.size() && p[i + 1] == ':') {
        // A POSIX class such as [:alpha:] inside a bracket expression: copied whole.
        const std::size_t close = p.find(":]", i + 2);
        if (close != std::string_view::npos) {
          out.append(p.substr(i, close + 2 - i));
          i = close + 1;
          continue;
        }
      }
      ++class_depth;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') {
        out += '^';
        ++i;
      }
      class_start = true;
      continue;
    }
    if (c == ']' && class_depth > 0 && !at_class_start) --class_depth;
    out += c;
  }
  return out;
}

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

Regex::Regex(std::string_view pattern, bool literal)
    : pattern_(pattern), compiled_(std::make_unique<Compiled>()) {
  if (const auto bad = unicode::find_invalid_utf8(pattern)) {
    throw make_error("pattern is not valid UTF-8 (byte ", *bad, ")");
  }
  const std::string source = literal ? std::string(pattern) : oniguruma_to_pcre2(pattern);
  // Ruby syntax (Oniguruma's default): ^ and $ match at line starts and ends, lines end at "\n".
  uint32_t options = PCRE2_UTF;
  if (literal) {
    options |= PCRE2_LITERAL;
  } else {
    options |= PCRE2_UCP | PCRE2_MULTILINE;
  }
  pcre2_compile_context* ctx = pcre2_compile_context_create(nullptr);
  if (ctx == nullptr) throw make_error("regex: out of memory");
  pcre2_set_newline(ctx, PCRE2_NEWLINE_LF);
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(),
                                  options, &error, &error_offset, ctx);
  pcre2_compile_context_free(ctx);
  if (compiled_->code == nullptr) {
    throw make_error("is not a valid regular expression: ", pcre2_message(error),
                     " (at byte ", error_offset, " of the pattern",
                     literal || source == pattern ? "" : " as rewritten for PCRE2", ")");
  }
  // JIT is an optimisation: where it is unavailable (or fails) the interpreter matches the same.
  pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);
}

Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;
Regex::~Regex() = default;

void Regex::find_matches(std::string_view text, std::vector<PatternPiece>& out) const {
  struct ToVector final : PieceSink {
    std::vector<PatternPiece>& out;
    explicit ToVector(std::vector<PatternPiece>& o) : out(o) {}
    void add(uint32_t begin, uint32_t end, bool is_match) override {
      out.push_back({begin, end, is_match});
    }
  } sink(out);
  find_matches(text, sink);
}

void Regex::find_matches(std::string_view text, PieceSink& sink) const {
  const auto n = static_cast<uint32_t>(text.size());
  if (n == 0) {
    sink.add(0, 0, false);
    return;
  }
  // The sink may match other patterns on this thread (a split of a split), which reuses the
  // match data: everything read from it is copied out before the sink is called.
  MatchScratch& s = scratch();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t search_from = 0;
  bool any_match = false;
  std::size_t last_match_end = 0;
  uint32_t covered = 0;  // end of the last piece written
  while (search_from <= text.size()) {
    const int rc = pcre2_match(compiled_->code, subject, text.size(), search_from,
                               PCRE2_NO_UTF_CHECK, s.data, s.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      throw make_error("regex /", pattern_, "/: matching failed: ", pcre2_message(rc));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.data);
    const auto begin = static_cast<uint32_t>(ov[0]);
    const auto end = static_cast<uint32_t>(ov[1]);
    if (begin == end && any_match && last_match_end == end) {
      // Oniguruma's iterator refuses an empty match where the last one ended and searches again
      // one character further on.
      search_from += search_from < text.size()
                         ? unicode::utf8_length(static_cast<unsigned char>(text[search_from]))
                         : 1;
      continue;
    }
    search_from = end;
    last_match_end = end;
    any_match = true;
    if (covered != begin) sink.add(covered, begin, false);
    sink.add(begin, end, true);
    covered = end;
  }
  if (covered != n) sink.add(covered, n, false);
}

Regex pattern_from_json(const JsonRef& pattern) {
  pattern.expect_object();
  const auto literal = pattern.find("String");
  const auto regex = pattern.find("Regex");
  if (pattern.value().size() != 1 || !(literal || regex)) {
    pattern.fail("must be {\"String\": ...} or {\"Regex\": ...}");
  }
  const JsonRef& which = literal ? *literal : *regex;
  const std::string text = which.as_string();
  try {
    return Regex(text, literal.has_value());
  } catch (const Error& e) {
    which.fail(e.what());
  }
}

}  // namespace il::text
