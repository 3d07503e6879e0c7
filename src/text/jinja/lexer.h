// Splits a template into text and the tokens inside {{ }} and {% %} tags, applying jinja2's
// whitespace rules as transformers configures them: trim_blocks (drop the first newline after a
// block or comment tag), lstrip_blocks (drop spaces and tabs before a block or comment tag that
// starts its line), `-` on a tag (strip all whitespace on that side), `+` (keep it), and
// keep_trailing_newline=False (one newline at the very end of the template is dropped).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace il::text::jinja {

struct Token {
  enum class Type : uint8_t {
    kText,        // literal output (text)
    kVarBegin,    // {{
    kVarEnd,      // }}
    kBlockBegin,  // {%
    kBlockEnd,    // %}
    kName,
    kString,  // text holds the unescaped value
    kInt,
    kFloat,
    kOp,  // text holds the operator
    kEof,
  };
  Type type;
  std::string text;
  int64_t i = 0;
  double f = 0;
  int line = 1;
  int col = 1;
};

// Throws il::Error "<source>:<line>:<col>: <what>" on malformed input.
std::vector<Token> tokenize(std::string_view src, const std::string& source_name);

}  // namespace il::text::jinja
