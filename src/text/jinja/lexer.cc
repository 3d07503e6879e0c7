#include "text/jinja/lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "core/error.h"

namespace il::text::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// "\r\n" and "\r" become "\n", as jinja2 normalizes newlines in text and string literals.
std::string normalize_newlines(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t k = 0; k < s.size(); ++k) {
    if (s[k] == '\r') {
      out += '\n';
      if (k + 1 < s.size() && s[k + 1] == '\n') ++k;
    } else {
      out += s[k];
    }
  }
  return out;
}

class Lexer {
 public:
  Lexer(std::string_view src, const std::string& name) : src_(src), name_(name) {
    // keep_trailing_newline=False: one newline at the very end of the source is not part of it.
    if (src_.size() >= 2 && src_.substr(src_.size() - 2) == "\r\n") {
      src_.remove_suffix(2);
    } else if (!src_.empty() && (src_.back() == '\n' || src_.back() == '\r')) {
      src_.remove_suffix(1);
    }
  }

  std::vector<Token> run() {
    std::size_t pos = 0;
    bool strip_next = false;  // the previous tag ended with `-`
    bool trim_next = false;   // the previous tag was a block or comment (trim_blocks)
    while (pos <= src_.size()) {
      const std::size_t open = find_tag(pos);
      std::string_view text = src_.substr(pos, open - pos);
      const bool at_end = open >= src_.size();
      char kind = at_end ? 0 : src_[open + 1];
      char mod = at_end || open + 2 >= src_.size() ? 0 : src_[open + 2];
      // Whitespace rules on the text before the tag.
      if (strip_next) {
        while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
      } else if (trim_next && !text.empty() && text.front() == '\n') {
        text.remove_prefix(1);
      }
      if (!at_end && mod == '-') {
        while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
      } else if (!at_end && mod != '+' && (kind == '%' || kind == '#')) {
        const std::size_t nl = text.rfind('\n');
        const std::size_t line_start = nl == std::string_view::npos ? 0 : nl + 1;
        const std::size_t text_begin = static_cast<std::size_t>(text.data() - src_.data());
        const bool starts_line =
            nl != std::string_view::npos || text_begin == 0 || src_[text_begin - 1] == '\n';
        std::string_view tail = text.substr(line_start);
        if (starts_line && std::all_of(tail.begin(), tail.end(), [](char c) { return c == ' ' || c == '\t'; })) {
          text = text.substr(0, line_start);
        }
      }
      if (!text.empty()) {
        Token t{Token::Type::kText, normalize_newlines(text)};
        set_pos(t, static_cast<std::size_t>(text.data() - src_.data()));
        out_.push_back(std::move(t));
      }
      if (at_end) break;
      std::size_t p = open + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      if (kind == '#') {
        const std::size_t close = src_.find("#}", p);
        if (close == std::string_view::npos) fail(open, "unclosed comment");
        strip_next = close > p && src_[close - 1] == '-';
        trim_next = true;
        pos = close + 2;
        continue;
      }
      const std::size_t tag_start = out_.size();
      pos = lex_tag(open, p, kind, strip_next);
      trim_next = kind == '%';
      if (kind == '%') pos = maybe_raw(tag_start, pos, strip_next, trim_next);
    }
    Token eof{Token::Type::kEof};
    set_pos(eof, src_.size());
    out_.push_back(eof);
    return std::move(out_);
  }

 private:
  // The offset of the first "{{", "{%" or "{#" at or after pos, or src_.size().
  std::size_t find_tag(std::size_t pos) const {
    while (pos + 1 < src_.size()) {
      const std::size_t k = src_.find('{', pos);
      if (k == std::string_view::npos || k + 1 >= src_.size()) break;
      const char c = src_[k + 1];
      if (c == '{' || c == '%' || c == '#') return k;
      pos = k + 1;
    }
    return src_.size();
  }

  std::size_t line_begin_of(std::size_t off) const {
    const std::size_t nl = off == 0 ? std::string_view::npos : src_.rfind('\n', off - 1);
    return nl == std::string_view::npos ? 0 : nl + 1;
  }

  void set_pos(Token& t, std::size_t off) const {
    if (newlines_.empty() && !src_.empty()) {
      for (std::size_t k = 0; k < src_.size(); ++k) {
        if (src_[k] == '\n') newlines_.push_back(k);
      }
      newlines_.push_back(src_.size() + 1);  // a sentinel, so the table is built once
    }
    const auto before = std::lower_bound(newlines_.begin(), newlines_.end(), off) - newlines_.begin();
    t.line = 1 + static_cast<int>(before);
    t.col = 1 + static_cast<int>(off - (before == 0 ? 0 : newlines_[before - 1] + 1));
  }

  [[noreturn]] void fail(std::size_t off, const std::string& what) const {
    Token t;
    set_pos(t, std::min(off, src_.size()));
    throw make_error(name_, ":", t.line, ":", t.col, ": template syntax error: ", what);
  }

  // Lexes the inside of a {{ }} or {% %} tag starting at p; returns the offset after its end.
  std::size_t lex_tag(std::size_t open, std::size_t p, char kind, bool& strip_next) {
    Token begin{kind == '{' ? Token::Type::kVarBegin : Token::Type::kBlockBegin};
    set_pos(begin, open);
    out_.push_back(begin);
    const char close = kind == '{' ? '}' : '%';
    int depth = 0;
    while (true) {
      while (p < src_.size() && is_space(src_[p])) ++p;
      if (p >= src_.size()) fail(open, kind == '{' ? "unclosed '{{'" : "unclosed '{%'");
      const char c = src_[p];
      // The end of the tag: "}}" / "%}", optionally "-}}" / "-%}" (only outside brackets).
      if (depth == 0) {
        std::size_t q = p;
        bool minus = false;
        if (src_[q] == '-' && q + 1 < src_.size() && src_[q + 1] == close) {
          minus = true;
          ++q;
        }
        if (src_.compare(q, 2, kind == '{' ? "}}" : "%}") == 0 && (minus || src_[q] == close)) {
          Token end{kind == '{' ? Token::Type::kVarEnd : Token::Type::kBlockEnd};
          set_pos(end, p);
          out_.push_back(end);
          strip_next = minus;
          return q + 2;
        }
      }
      Token t;
      set_pos(t, p);
      if (is_name_start(c)) {
        std::size_t e = p;
        while (e < src_.size() && is_name_char(src_[e])) ++e;
        t.type = Token::Type::kName;
        t.text = std::string(src_.substr(p, e - p));
        p = e;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        p = lex_number(p, t);
      } else if (c == '\'' || c == '"') {
        p = lex_string(p, t);
      } else {
        static const char* kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/",
                                     "%", "~", "<", ">", "=", "(", ")", "[", "]", "{", "}",
                                     ",", ".", ":", "|"};
        const char* found = nullptr;
        for (const char* op : kOps) {
          if (src_.compare(p, std::char_traits<char>::length(op), op) == 0) {
            found = op;
            break;
          }
        }
        if (!found) fail(p, std::string("unexpected character '") + c + "'");
        t.type = Token::Type::kOp;
        t.text = found;
        p += t.text.size();
        if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
        if ((t.text == ")" || t.text == "]" || t.text == "}") && depth > 0) --depth;
      }
      out_.push_back(std::move(t));
    }
  }

  std::size_t lex_number(std::size_t p, Token& t) const {
    std::size_t e = p;
    std::string digits;
    auto eat_digits = [&] {
      while (e < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) {
        if (src_[e] != '_') digits += src_[e];
        ++e;
      }
    };
    eat_digits();
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' && std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      is_float = true;
      digits += '.';
      ++e;
      eat_digits();
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      std::size_t q = e + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && std::isdigit(static_cast<unsigned char>(src_[q]))) {
        is_float = true;
        digits += std::string(src_.substr(e, q - e));
        e = q;
        eat_digits();
      }
    }
    errno = 0;
    if (is_float) {
      t.type = Token::Type::kFloat;
      t.f = std::strtod(digits.c_str(), nullptr);
    } else {
      t.type = Token::Type::kInt;
      t.i = std::strtoll(digits.c_str(), nullptr, 10);
      if (errno == ERANGE) fail(p, "integer literal too large");
    }
    t.text = digits;
    return e;
  }

  // A quoted string with Python's escapes (unknown escapes keep their backslash).
  std::size_t lex_string(std::size_t p, Token& t) const {
    const char q = src_[p];
    std::string raw;
    std::size_t e = p + 1;
    while (true) {
      if (e >= src_.size()) fail(p, "unterminated string literal");
      if (src_[e] == q) break;
      if (src_[e] == '\\' && e + 1 < src_.size()) raw += src_[e++];
      raw += src_[e++];
    }
    raw = normalize_newlines(raw);
    std::string out;
    for (std::size_t k = 0; k < raw.size(); ++k) {
      if (raw[k] != '\\' || k + 1 >= raw.size()) {
        out += raw[k];
        continue;
      }
      const char c = raw[++k];
      auto hex = [&](int n) -> uint32_t {
        uint32_t v = 0;
        for (int d = 1; d <= n; ++d) {
          if (k + d >= raw.size() || !std::isxdigit(static_cast<unsigned char>(raw[k + d]))) {
            fail(p, "truncated escape in string literal");
          }
          const char h = static_cast<char>(std::tolower(static_cast<unsigned char>(raw[k + d])));
          v = v * 16 + static_cast<uint32_t>(h <= '9' ? h - '0' : h - 'a' + 10);
        }
        k += n;
        return v;
      };
      switch (c) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '\n': break;  // a backslash-newline continues the line
        case 'x': append_utf8(out, hex(2)); break;
        case 'u': append_utf8(out, hex(4)); break;
        case 'U': {
          const uint32_t cp = hex(8);
          if (cp > 0x10FFFF) fail(p, "escape \\U beyond U+10FFFF in string literal");
          append_utf8(out, cp);
          break;
        }
        default:
          if (c >= '0' && c <= '7') {
            uint32_t v = static_cast<uint32_t>(c - '0');
            for (int d = 0; d < 2 && k + 1 < raw.size() && raw[k + 1] >= '0' && raw[k + 1] <= '7'; ++d) {
              v = v * 8 + static_cast<uint32_t>(raw[++k] - '0');
            }
            append_utf8(out, v);
          } else {
            out += '\\';
            out += c;
          }
      }
    }
    t.type = Token::Type::kString;
    t.text = std::move(out);
    return e + 1;
  }

  // `{% raw %}...{% endraw %}`: the text in between is output as is.
  std::size_t maybe_raw(std::size_t tag_start, std::size_t pos, bool& strip_next, bool& trim_next) {
    if (out_.size() != tag_start + 3 || out_[tag_start + 1].type != Token::Type::kName ||
        out_[tag_start + 1].text != "raw") {
      return pos;
    }
    out_.resize(tag_start);
    std::size_t search = pos;
    while (true) {
      const std::size_t k = src_.find("{%", search);
      if (k == std::string_view::npos) fail(pos, "missing {% endraw %}");
      std::size_t q = k + 2;
      const bool minus = q < src_.size() && src_[q] == '-';
      if (minus || (q < src_.size() && src_[q] == '+')) ++q;
      while (q < src_.size() && is_space(src_[q])) ++q;
      if (src_.compare(q, 6, "endraw") != 0) {
        search = k + 2;
        continue;
      }
      q += 6;
      while (q < src_.size() && is_space(src_[q])) ++q;
      bool close_minus = false;
      if (q < src_.size() && src_[q] == '-') {
        close_minus = true;
        ++q;
      }
      if (src_.compare(q, 2, "%}") != 0) fail(k, "malformed {% endraw %}");
      std::string_view body = src_.substr(pos, k - pos);
      // jinja2 does not apply trim_blocks to the newline after {% raw %}.
      if (strip_next) {
        while (!body.empty() && is_space(body.front())) body.remove_prefix(1);
      }
      if (minus) {
        while (!body.empty() && is_space(body.back())) body.remove_suffix(1);
      }
      if (!body.empty()) {
        Token t{Token::Type::kText, normalize_newlines(body)};
        set_pos(t, pos);
        out_.push_back(std::move(t));
      }
      strip_next = close_minus;
      trim_next = true;
      return q + 2;
    }
  }

  std::string_view src_;
  const std::string& name_;
  std::vector<Token> out_;
  mutable std::vector<std::size_t> newlines_;  // offsets of '\n', for line:column
};

}  // namespace

std::vector<Token> tokenize(std::string_view src, const std::string& source_name) {
  return Lexer(src, source_name).run();
}

}  // namespace il::text::jinja
