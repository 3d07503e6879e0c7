// Python's str operations on UTF-8 text, by code point: case mapping (utf8proc), whitespace as
// str.isspace() sees it, strip / split / replace with str's exact rules.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "text/jinja/value.h"

namespace il::text::jinja {

std::vector<std::string> code_points(const std::string& s);
std::string map_case(const std::string& s, int mode);  // 0 lower, 1 upper
bool is_cased_letter(const std::string& cp);
std::string title_case(const std::string& s);           // str.title()
bool py_space(const std::string& cp);
// str.strip / lstrip / rstrip: chars is a string, or none for whitespace.
std::string strip(const std::string& s, const Value& chars, bool left, bool right);
// str.split(sep, maxsplit): sep a string, or none for runs of whitespace; maxsplit < 0: no limit.
std::vector<std::string> split(const std::string& s, const Value& sep, int64_t maxsplit);
// str.replace(a, b, count); count < 0: all.
std::string replace_all(const std::string& s, const std::string& a, const std::string& b, int64_t count);

}  // namespace il::text::jinja
