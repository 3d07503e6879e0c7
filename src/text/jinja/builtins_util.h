// Helpers the builtins share (methods.cc, filters.cc, globals.cc): call arguments, Python's int(),
// nested attributes, and the bound methods of str and dict.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "text/jinja/interpreter.h"

namespace il::text::jinja {

Value str_list(const std::vector<std::string>& parts);
// The argument at `index` or named `name`; null when absent.
const Value* arg(const Args& a, std::size_t index, const char* name);
Value arg_or(const Args& a, std::size_t index, const char* name, Value fallback);
int64_t int_arg(const Args& a, std::size_t index, const char* name, int64_t fallback);
const std::string& need_string(const Value& v, const char* what);
// Python's int() of a value (for the int filter: false when it fails).
bool to_int(const Value& v, int64_t& out);
// An int or bool as an integer.
bool integral(const Value& v, int64_t& out);
// The attribute of an item for map/selectattr/sort ("a.b" walks nested dicts).
Value item_attribute(const Value& item, const std::string& path);
// str.<name> / dict.<name> bound to self; undefined when there is no such method.
Value string_method(const Value& self, const std::string& name);
Value dict_method(const Value& self, const std::string& name);

}  // namespace il::text::jinja
