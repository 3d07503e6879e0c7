// Parses a token stream (lexer.h) into statements (ast.h), as jinja2's grammar does for the
// subset chat templates use. Errors name the source, line and column.
#pragma once

#include <string>
#include <vector>

#include "text/jinja/ast.h"
#include "text/jinja/lexer.h"

namespace il::text::jinja {

Body parse(const std::vector<Token>& tokens, const std::string& source_name);

}  // namespace il::text::jinja
