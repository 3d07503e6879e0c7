// The values a chat template computes with: Python's data model as far as jinja2 templates see it
// (None, bool, int, float, str, list, tuple, dict in insertion order), plus jinja2's Undefined and
// callables (macros, builtins, bound methods). Lists and dicts are shared by reference like Python
// objects; templates cannot mutate them (transformers renders in an immutable sandbox), except a
// namespace(), whose attributes `{% set ns.x = ... %}` assigns.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace il::text::jinja {

struct Value;
class Interpreter;

using List = std::vector<Value>;

// Keyword and positional arguments of a call.
struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};

using NativeFn = std::function<Value(Interpreter&, Args&)>;

struct Dict;
struct Callable {
  std::string name;
  NativeFn fn;
};

struct Value {
  enum class Kind : uint8_t { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable };
  Kind kind = Kind::kUndefined;
  bool is_tuple = false;      // a list that prints as (a, b)
  bool is_namespace = false;  // a dict whose attributes templates may assign
  uint16_t nest = 0;          // levels of lists / dicts inside (bounded: see kMaxNest)
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // the string; for an undefined value, the reason it is undefined
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;
  std::shared_ptr<Callable> fn;

  static Value undefined(std::string why = {});
  static Value none();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value number(double v);
  static Value string(std::string v);
  static Value make_list(List items, bool tuple = false);
  static Value make_dict();
  static Value callable(std::string name, NativeFn fn);

  bool is_undefined() const { return kind == Kind::kUndefined; }
  bool is_none() const { return kind == Kind::kNone; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_list() const { return kind == Kind::kList; }
  bool is_dict() const { return kind == Kind::kDict; }
  bool is_number() const { return kind == Kind::kInt || kind == Kind::kFloat || kind == Kind::kBool; }
  double as_double() const { return kind == Kind::kFloat ? f : kind == Kind::kBool ? (b ? 1 : 0) : double(i); }
};

// Lists and dicts a template builds may nest at most this deep, so that printing, comparing and
// freeing them (all recursive) cannot exhaust the stack.
constexpr int kMaxNest = 256;
// Sets d.nest from its items; throws il::Error beyond kMaxNest.
void update_nest(Value& d);

struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value v);
};

// Python's bool(v); undefined is false.
bool truthy(const Value& v);
// Python's str(v) (undefined prints as "").
std::string to_str(const Value& v);
// Python's repr(v).
std::string repr(const Value& v);
// Python's repr of a float ("1.0", "1e-05", "1e+16").
std::string float_repr(double v);
// Python's == (1 == 1.0 == True; lists and dicts deeply).
bool equal(const Value& a, const Value& b);
// Python's <; throws il::Error for types that do not order.
bool less(const Value& a, const Value& b);
// The type name Python would use in an error message.
std::string type_name(const Value& v);

// json.dumps(v, ensure_ascii=False, indent=..., separators=..., sort_keys=...) as transformers'
// tojson filter calls it. indent < 0 means none; indent_str replaces spaces when given.
struct JsonStyle {
  bool indent_set = false;
  std::string indent;  // the text of one indent level
  std::string item_sep = ", ";
  std::string key_sep = ": ";
  bool sort_keys = false;
};
std::string to_json(const Value& v, const JsonStyle& style);

// Refuses JSON nested deeper than 256 levels (a hostile request must not exhaust the stack).
Value from_json(const nlohmann::ordered_json& j, int depth = 0);

}  // namespace il::text::jinja
