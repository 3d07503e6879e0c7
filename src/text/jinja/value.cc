#include "text/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace il::text::jinja {

Value Value::undefined(std::string why) {
  Value v;
  v.s = std::move(why);
  return v;
}
Value Value::none() {
  Value v;
  v.kind = Kind::kNone;
  return v;
}
Value Value::boolean(bool x) {
  Value v;
  v.kind = Kind::kBool;
  v.b = x;
  return v;
}
Value Value::integer(int64_t x) {
  Value v;
  v.kind = Kind::kInt;
  v.i = x;
  return v;
}
Value Value::number(double x) {
  Value v;
  v.kind = Kind::kFloat;
  v.f = x;
  return v;
}
Value Value::string(std::string x) {
  Value v;
  v.kind = Kind::kString;
  v.s = std::move(x);
  return v;
}
Value Value::make_list(List items, bool tuple) {
  Value v;
  v.kind = Kind::kList;
  v.is_tuple = tuple;
  v.list = std::make_shared<List>(std::move(items));
  update_nest(v);
  return v;
}

void update_nest(Value& v) {
  int deepest = 0;
  if (v.is_list()) {
    for (const Value& x : *v.list) deepest = std::max<int>(deepest, x.nest);
  } else if (v.is_dict() && !v.is_namespace) {
    for (const auto& kv : v.dict->items) deepest = std::max<int>(deepest, kv.second.nest);
  } else {
    return;
  }
  check(deepest + 1 <= kMaxNest, "a list or dict nested more than ", kMaxNest, " levels deep");
  v.nest = static_cast<uint16_t>(deepest + 1);
}
Value Value::make_dict() {
  Value v;
  v.kind = Kind::kDict;
  v.dict = std::make_shared<Dict>();
  return v;
}
Value Value::callable(std::string name, NativeFn fn) {
  Value v;
  v.kind = Kind::kCallable;
  v.fn = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::set(const std::string& key, Value v) {
  for (auto& [k, old] : items) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  items.emplace_back(key, std::move(v));
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return false;
    case Value::Kind::kBool: return v.b;
    case Value::Kind::kInt: return v.i != 0;
    case Value::Kind::kFloat: return v.f != 0;
    case Value::Kind::kString: return !v.s.empty();
    case Value::Kind::kList: return !v.list->empty();
    case Value::Kind::kDict: return !v.dict->items.empty();
    case Value::Kind::kCallable: return true;
  }
  return false;
}

std::string float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (x == 0) return std::signbit(x) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: positional for exponents -4..15.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  auto e = sci.find('e');
  int exp = std::stoi(sci.substr(e + 1));
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits += c;
  }
  std::string out;
  if (exp < -4 || exp >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  } else if (exp < 0) {
    out = "0." + std::string(-exp - 1, '0') + digits;
  } else if (static_cast<std::size_t>(exp) + 1 >= digits.size()) {
    out = digits + std::string(exp + 1 - digits.size(), '0') + ".0";
  } else {
    out = digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
  }
  return neg ? "-" + out : out;
}

namespace {

std::string repr_string(const std::string& s) {
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == q) {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + q;
}

}  // namespace

std::string repr(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kString: return repr_string(v.s);
    case Value::Kind::kList: {
      std::string out = v.is_tuple ? "(" : "[";
      for (std::size_t k = 0; k < v.list->size(); ++k) {
        if (k) out += ", ";
        out += repr((*v.list)[k]);
      }
      if (v.is_tuple && v.list->size() == 1) out += ",";
      return out + (v.is_tuple ? ")" : "]");
    }
    case Value::Kind::kDict: {
      if (v.is_namespace) return "<Namespace>";
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : v.dict->items) {
        if (!first) out += ", ";
        first = false;
        out += repr_string(k) + ": " + repr(x);
      }
      return out + "}";
    }
    case Value::Kind::kUndefined: return "Undefined";
    default: return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined: return "";
    case Value::Kind::kNone: return "None";
    case Value::Kind::kBool: return v.b ? "True" : "False";
    case Value::Kind::kInt: return std::to_string(v.i);
    case Value::Kind::kFloat: return float_repr(v.f);
    case Value::Kind::kString: return v.s;
    case Value::Kind::kCallable: return "<function " + v.fn->name + ">";
    default: return repr(v);
  }
}

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind != Value::Kind::kFloat && b.kind != Value::Kind::kFloat) {
      return (a.kind == Value::Kind::kBool ? a.b : a.i) == (b.kind == Value::Kind::kBool ? b.b : b.i);
    }
    return a.as_double() == b.as_double();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kString: return a.s == b.s;
    case Value::Kind::kList:
      if (a.is_tuple != b.is_tuple || a.list->size() != b.list->size()) return false;
      for (std::size_t k = 0; k < a.list->size(); ++k) {
        if (!equal((*a.list)[k], (*b.list)[k])) return false;
      }
      return true;
    case Value::Kind::kDict:
      if (a.dict == b.dict) return true;
      if (a.is_namespace || b.is_namespace) return false;  // compared by identity, as in Python
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, x] : a.dict->items) {
        const Value* y = b.dict->find(k);
        if (!y || !equal(x, *y)) return false;
      }
      return true;
    case Value::Kind::kCallable: return a.fn == b.fn;
    default: return false;
  }
}

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined: return "Undefined";
    case Value::Kind::kNone: return "NoneType";
    case Value::Kind::kBool: return "bool";
    case Value::Kind::kInt: return "int";
    case Value::Kind::kFloat: return "float";
    case Value::Kind::kString: return "str";
    case Value::Kind::kList: return v.is_tuple ? "tuple" : "list";
    case Value::Kind::kDict: return v.is_namespace ? "Namespace" : "dict";
    case Value::Kind::kCallable: return "function";
  }
  return "?";
}

bool less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind == Value::Kind::kFloat || b.kind == Value::Kind::kFloat) {
      return a.as_double() < b.as_double();
    }
    return (a.kind == Value::Kind::kBool ? a.b : a.i) < (b.kind == Value::Kind::kBool ? b.b : b.i);
  }
  if (a.is_string() && b.is_string()) return a.s < b.s;  // UTF-8 byte order = code point order
  if (a.is_list() && b.is_list() && a.is_tuple == b.is_tuple) {
    const auto& x = *a.list;
    const auto& y = *b.list;
    for (std::size_t k = 0; k < std::min(x.size(), y.size()); ++k) {
      if (!equal(x[k], y[k])) return less(x[k], y[k]);
    }
    return x.size() < y.size();
  }
  throw make_error("'<' not supported between instances of '", type_name(a), "' and '",
                   type_name(b), "'");
}

namespace {

void json_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void json_value(std::string& out, const Value& v, const JsonStyle& st, int depth) {
  check(depth < 512, "tojson: value nested too deeply");
  auto newline = [&](int d) {
    if (!st.indent_set) return;
    out += '\n';
    for (int k = 0; k < d; ++k) out += st.indent;
  };
  switch (v.kind) {
    case Value::Kind::kNone: out += "null"; return;
    case Value::Kind::kBool: out += v.b ? "true" : "false"; return;
    case Value::Kind::kInt: out += std::to_string(v.i); return;
    case Value::Kind::kFloat:
      out += std::isnan(v.f) ? "NaN" : std::isinf(v.f) ? (v.f > 0 ? "Infinity" : "-Infinity")
                                                         : float_repr(v.f);
      return;
    case Value::Kind::kString: json_string(out, v.s); return;
    case Value::Kind::kList: {
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (std::size_t k = 0; k < v.list->size(); ++k) {
        if (k) out += st.item_sep;
        newline(depth + 1);
        json_value(out, (*v.list)[k], st, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::kDict: {
      if (v.is_namespace) break;
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : v.dict->items) items.push_back(&kv);
      if (st.sort_keys) {
        std::stable_sort(items.begin(), items.end(),
                         [](auto* a, auto* b) { return a->first < b->first; });
      }
      out += '{';
      for (std::size_t k = 0; k < items.size(); ++k) {
        if (k) out += st.item_sep;
        newline(depth + 1);
        json_string(out, items[k]->first);
        out += st.key_sep;
        json_value(out, items[k]->second, st, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    }
    default: break;
  }
  throw make_error("tojson: Object of type ", type_name(v), " is not JSON serializable");
}

}  // namespace

std::string to_json(const Value& v, const JsonStyle& style) {
  std::string out;
  json_value(out, v, style, 0);
  return out;
}

Value from_json(const nlohmann::ordered_json& j, int depth) {
  using J = nlohmann::ordered_json;
  check(depth < kMaxNest - 1, "chat template input: JSON nested more than ", kMaxNest - 1, " levels deep");
  switch (j.type()) {
    case J::value_t::null: return Value::none();
    case J::value_t::boolean: return Value::boolean(j.get<bool>());
    case J::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case J::value_t::number_unsigned: {
      const auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case J::value_t::number_float: return Value::number(j.get<double>());
    case J::value_t::string: return Value::string(j.get<std::string>());
    case J::value_t::array: {
      List items;
      items.reserve(j.size());
      for (const auto& x : j) items.push_back(from_json(x, depth + 1));
      return Value::make_list(std::move(items));
    }
    case J::value_t::object: {
      Value d = Value::make_dict();
      d.dict->items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        d.dict->items.emplace_back(it.key(), from_json(it.value(), depth + 1));
      }
      update_nest(d);
      return d;
    }
    default: throw make_error("chat template input: unsupported JSON value");
  }
}

}  // namespace il::text::jinja
