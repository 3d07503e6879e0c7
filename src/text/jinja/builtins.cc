// Filters, tests, methods and globals of jinja2 that chat templates use, with Python's semantics.
#include <utf8proc.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <set>

#include "text/jinja/interpreter.h"

namespace il::text::jinja {
namespace {

using Kind = Value::Kind;

// ---- UTF-8 helpers: Python strings index by code point ----

std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[k]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    n = std::min(n, s.size() - k);
    out.emplace_back(s.substr(k, n));
    k += n;
  }
  return out;
}

std::string map_case(const std::string& s, int mode) {  // 0 lower, 1 upper
  std::string out;
  utf8proc_int32_t cp;
  for (std::size_t k = 0; k < s.size();) {
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + k),
                                    static_cast<utf8proc_ssize_t>(s.size() - k), &cp);
    if (n <= 0) {
      out += s[k++];
      continue;
    }
    const utf8proc_int32_t m = mode == 0 ? utf8proc_tolower(cp) : utf8proc_toupper(cp);
    utf8proc_uint8_t buf[4];
    const auto w = utf8proc_encode_char(m, buf);
    out.append(reinterpret_cast<char*>(buf), static_cast<std::size_t>(w));
    k += static_cast<std::size_t>(n);
  }
  return out;
}

bool is_cased_letter(const std::string& cp) {
  return map_case(cp, 0) != map_case(cp, 1);
}

// Python's str.title(): a cased letter after a cased letter is lowered, otherwise uppered.
std::string title_case(const std::string& s) {
  std::string out;
  bool prev_cased = false;
  for (const auto& cp : code_points(s)) {
    const bool cased = is_cased_letter(cp);
    out += cased ? map_case(cp, prev_cased ? 0 : 1) : cp;
    prev_cased = cased;
  }
  return out;
}

bool py_space(const std::string& cp) {
  return cp == " " || cp == "\t" || cp == "\n" || cp == "\r" || cp == "\v" || cp == "\f" ||
         cp == "\x1c" || cp == "\x1d" || cp == "\x1e" || cp == "\x1f" || cp == "\xc2\x85" ||
         cp == "\xc2\xa0" || cp == "\xe3\x80\x80" || cp == "\xe2\x80\xa8" || cp == "\xe2\x80\xa9";
}

// str.strip / lstrip / rstrip with Python's whitespace or the given characters.
std::string strip(const std::string& s, const Value& chars, bool left, bool right) {
  auto cps = code_points(s);
  std::set<std::string> set;
  const bool custom = chars.is_string();
  if (custom) {
    for (auto& c : code_points(chars.s)) set.insert(c);
  }
  auto strip_it = [&](const std::string& c) { return custom ? set.count(c) > 0 : py_space(c); };
  std::size_t b = 0;
  std::size_t e = cps.size();
  if (left) {
    while (b < e && strip_it(cps[b])) ++b;
  }
  if (right) {
    while (e > b && strip_it(cps[e - 1])) --e;
  }
  std::string out;
  for (std::size_t k = b; k < e; ++k) out += cps[k];
  return out;
}

std::vector<std::string> split(const std::string& s, const Value& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (!sep.is_string()) {  // runs of whitespace, no empty parts
    const auto cps = code_points(s);
    std::string part;
    bool in_part = false;
    for (std::size_t k = 0; k < cps.size(); ++k) {
      if (py_space(cps[k])) {
        if (in_part) {
          out.push_back(part);
          part.clear();
          in_part = false;
        }
        continue;
      }
      if (!in_part && maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
        std::string rest;
        for (std::size_t j = k; j < cps.size(); ++j) rest += cps[j];
        out.push_back(rest);  // Python keeps the remainder's trailing whitespace
        return out;
      }
      in_part = true;
      part += cps[k];
    }
    if (in_part) out.push_back(part);
    return out;
  }
  if (sep.s.empty()) throw make_error("empty separator");
  std::size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    const std::size_t k = s.find(sep.s, start);
    if (k == std::string::npos) break;
    out.push_back(s.substr(start, k - start));
    start = k + sep.s.size();
  }
  out.push_back(s.substr(start));
  return out;
}

std::string replace_all(const std::string& s, const std::string& a, const std::string& b, int64_t count) {
  std::string out;
  if (a.empty()) {  // Python inserts b between every code point
    const auto cps = code_points(s);
    int64_t n = 0;
    for (const auto& cp : cps) {
      if (count < 0 || n < count) {
        out += b;
        ++n;
      }
      out += cp;
    }
    if (count < 0 || n < count) out += b;
    return out;
  }
  std::size_t start = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    const std::size_t k = s.find(a, start);
    if (k == std::string::npos) break;
    out.append(s, start, k - start);
    out += b;
    start = k + a.size();
    ++n;
  }
  out.append(s, start, std::string::npos);
  return out;
}

Value str_list(const std::vector<std::string>& parts) {
  List out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.push_back(Value::string(p));
  return Value::make_list(std::move(out));
}

// ---- argument helpers ----

const Value* arg(const Args& a, std::size_t index, const char* name) {
  if (index < a.pos.size()) return &a.pos[index];
  for (const auto& [k, v] : a.kw) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value arg_or(const Args& a, std::size_t index, const char* name, Value fallback) {
  const Value* v = arg(a, index, name);
  return v ? *v : fallback;
}

int64_t int_arg(const Args& a, std::size_t index, const char* name, int64_t fallback) {
  const Value* v = arg(a, index, name);
  if (!v || v->is_none()) return fallback;
  if (v->kind == Kind::kInt) return v->i;
  if (v->kind == Kind::kBool) return v->b;
  throw make_error("argument '", name, "' must be an integer, not ", type_name(*v));
}

const std::string& need_string(const Value& v, const char* what) {
  if (!v.is_string()) throw make_error(what, " expects a string, got ", type_name(v));
  return v.s;
}

// Python's int() of a value (for the int filter: failures give the default).
bool to_int(const Value& v, int64_t& out) {
  switch (v.kind) {
    case Kind::kInt: out = v.i; return true;
    case Kind::kBool: out = v.b; return true;
    case Kind::kFloat:
      if (!std::isfinite(v.f) || std::fabs(v.f) > 9.2e18) return false;
      out = static_cast<int64_t>(v.f);
      return true;
    case Kind::kString: {
      const std::string t = strip(v.s, Value::none(), true, true);
      if (t.empty()) return false;
      char* end = nullptr;
      errno = 0;
      const long long x = std::strtoll(t.c_str(), &end, 10);
      if (*end == 0 && errno == 0) {
        out = x;
        return true;
      }
      const double d = std::strtod(t.c_str(), &end);  // jinja2's int filter also accepts "3.5"
      if (*end != 0 || !std::isfinite(d) || std::fabs(d) > 9.2e18) return false;
      out = static_cast<int64_t>(d);
      return true;
    }
    default: return false;
  }
}

// The attribute of an item for map/selectattr/sort ("a.b" walks nested dicts).
Value item_attribute(const Value& item, const std::string& path) {
  Value cur = item;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (cur.is_undefined()) return cur;
    cur = get_item(cur, Value::string(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

// ---- methods ----

Value bound(std::string name, NativeFn fn) { return Value::callable(std::move(name), std::move(fn)); }

Value string_method(const Value& self, const std::string& name) {
  const std::string s = self.s;
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    return bound(name, [s, name](Interpreter&, Args& a) {
      return Value::string(strip(s, arg_or(a, 0, "chars", Value::none()), name != "rstrip", name != "lstrip"));
    });
  }
  if (name == "split") {
    return bound(name, [s](Interpreter&, Args& a) {
      return str_list(split(s, arg_or(a, 0, "sep", Value::none()), int_arg(a, 1, "maxsplit", -1)));
    });
  }
  if (name == "startswith" || name == "endswith") {
    return bound(name, [s, name](Interpreter&, Args& a) {
      const Value* p = arg(a, 0, "prefix");
      if (!p) throw make_error(name, "() takes at least 1 argument");
      List options = p->is_list() ? *p->list : List{*p};
      for (const Value& o : options) {
        const std::string& t = need_string(o, name.c_str());
        const bool hit = name == "startswith" ? s.compare(0, t.size(), t) == 0 && s.size() >= t.size()
                                              : s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
        if (hit) return Value::boolean(true);
      }
      return Value::boolean(false);
    });
  }
  if (name == "lower" || name == "upper") {
    return bound(name, [s, name](Interpreter&, Args&) { return Value::string(map_case(s, name == "upper")); });
  }
  if (name == "title") return bound(name, [s](Interpreter&, Args&) { return Value::string(title_case(s)); });
  if (name == "capitalize") {
    return bound(name, [s](Interpreter&, Args&) {
      auto cps = code_points(s);
      std::string out;
      for (std::size_t k = 0; k < cps.size(); ++k) out += map_case(cps[k], k == 0 ? 1 : 0);
      return Value::string(out);
    });
  }
  if (name == "replace") {
    return bound(name, [s](Interpreter&, Args& a) {
      const Value* x = arg(a, 0, "old");
      const Value* y = arg(a, 1, "new");
      if (!x || !y) throw make_error("replace() takes at least 2 arguments");
      return Value::string(replace_all(s, need_string(*x, "replace"), need_string(*y, "replace"),
                                       int_arg(a, 2, "count", -1)));
    });
  }
  if (name == "find" || name == "count") {
    return bound(name, [s, name](Interpreter&, Args& a) {
      const Value* x = arg(a, 0, "sub");
      if (!x) throw make_error(name, "() takes at least 1 argument");
      const std::string& t = need_string(*x, name.c_str());
      if (name == "find") {
        const std::size_t k = s.find(t);
        if (k == std::string::npos) return Value::integer(-1);
        return Value::integer(static_cast<int64_t>(utf8_length(s.substr(0, k))));
      }
      if (t.empty()) return Value::integer(static_cast<int64_t>(utf8_length(s) + 1));
      int64_t n = 0;
      for (std::size_t k = s.find(t); k != std::string::npos; k = s.find(t, k + t.size())) ++n;
      return Value::integer(n);
    });
  }
  if (name == "join") {
    return bound(name, [s](Interpreter&, Args& a) {
      const Value* x = arg(a, 0, "iterable");
      if (!x) throw make_error("join() takes exactly one argument");
      std::string out;
      bool first = true;
      for (const Value& v : iterate(*x)) {
        if (!first) out += s;
        first = false;
        out += need_string(v, "join");
      }
      return Value::string(out);
    });
  }
  if (name == "isdigit" || name == "isspace" || name == "isalpha") {
    return bound(name, [s, name](Interpreter&, Args&) {
      if (s.empty()) return Value::boolean(false);
      for (const auto& cp : code_points(s)) {
        const unsigned char c = static_cast<unsigned char>(cp[0]);
        const bool ok = name == "isdigit" ? (cp.size() == 1 && std::isdigit(c))
                        : name == "isspace" ? py_space(cp)
                                            : (cp.size() == 1 && std::isalpha(c));
        if (!ok) return Value::boolean(false);
      }
      return Value::boolean(true);
    });
  }
  return Value::undefined("'str object' has no attribute '" + name + "'");
}

Value dict_method(const Value& self, const std::string& name) {
  auto d = self.dict;
  if (name == "items") {
    return bound(name, [d](Interpreter&, Args&) {
      List out;
      for (const auto& [k, v] : d->items) out.push_back(Value::make_list({Value::string(k), v}, true));
      return Value::make_list(std::move(out));
    });
  }
  if (name == "keys" || name == "values") {
    return bound(name, [d, name](Interpreter&, Args&) {
      List out;
      for (const auto& [k, v] : d->items) out.push_back(name == "keys" ? Value::string(k) : v);
      return Value::make_list(std::move(out));
    });
  }
  if (name == "get") {
    return bound(name, [d](Interpreter&, Args& a) {
      const Value* k = arg(a, 0, "key");
      if (!k) throw make_error("get() takes at least 1 argument");
      const Value* v = k->is_string() ? d->find(k->s) : nullptr;
      return v ? *v : arg_or(a, 1, "default", Value::none());
    });
  }
  return Value::undefined("'dict object' has no attribute '" + name + "'");
}

// Methods that would modify a template's input, which transformers' immutable sandbox refuses.
bool is_unsafe_method(const Value& obj, const std::string& name) {
  if (obj.is_list()) {
    return name == "append" || name == "pop" || name == "extend" || name == "insert" ||
           name == "remove" || name == "sort" || name == "reverse" || name == "clear";
  }
  return obj.is_dict() && !obj.is_namespace &&
         (name == "pop" || name == "update" || name == "clear" || name == "setdefault" ||
          name == "popitem");
}

bool is_dict_method(const std::string& name) {
  return name == "items" || name == "keys" || name == "values" || name == "get";
}

}  // namespace

std::size_t utf8_length(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

List iterate(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined: return {};
    case Kind::kList: return *v.list;
    case Kind::kDict: {
      List out;
      for (const auto& kv : v.dict->items) out.push_back(Value::string(kv.first));
      return out;
    }
    case Kind::kString: {
      List out;
      for (auto& cp : code_points(v.s)) out.push_back(Value::string(cp));
      return out;
    }
    default: throw make_error("'", type_name(v), "' object is not iterable");
  }
}

Value get_attr(const Value& obj, const std::string& name) {
  if (is_unsafe_method(obj, name)) {
    throw make_error("access to attribute '", name, "' of '", type_name(obj),
                     "' object is unsafe (the template may not modify its input)");
  }
  if (obj.is_dict()) {
    if (!obj.is_namespace && is_dict_method(name)) return dict_method(obj, name);
    if (const Value* v = obj.dict->find(name)) return *v;
    return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + name + "'");
  }
  if (obj.is_string()) return string_method(obj, name);
  return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + name + "'");
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_dict()) {
    if (key.is_string()) {
      if (const Value* v = obj.dict->find(key.s)) return *v;
      if (!obj.is_namespace && is_dict_method(key.s)) return dict_method(obj, key.s);
    }
    return Value::undefined("'dict object' has no attribute " + repr(key));
  }
  if (obj.is_list() || obj.is_string()) {
    if (key.kind == Kind::kInt || key.kind == Kind::kBool) {
      int64_t k = key.kind == Kind::kBool ? key.b : key.i;
      if (obj.is_list()) {
        const int64_t n = static_cast<int64_t>(obj.list->size());
        if (k < 0) k += n;
        if (k < 0 || k >= n) return Value::undefined(type_name(obj) + " object has no element " + std::to_string(key.i));
        return (*obj.list)[static_cast<std::size_t>(k)];
      }
      const auto cps = code_points(obj.s);
      const int64_t n = static_cast<int64_t>(cps.size());
      if (k < 0) k += n;
      if (k < 0 || k >= n) return Value::undefined("str object has no element " + std::to_string(key.i));
      return Value::string(cps[static_cast<std::size_t>(k)]);
    }
    if (key.is_string()) return get_attr(obj, key.s);
    return Value::undefined(type_name(obj) + " indices must be integers");
  }
  return Value::undefined("'" + type_name(obj) + " object' has no attribute " + repr(key));
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step_v) {
  auto as_opt = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_none()) return std::nullopt;
    if (v.kind == Kind::kInt) return v.i;
    if (v.kind == Kind::kBool) return v.b;
    throw make_error("slice ", what, " must be an integer or none");
  };
  const int64_t step = as_opt(step_v, "step").value_or(1);
  if (step == 0) throw make_error("slice step cannot be zero");
  List items;
  std::vector<std::string> cps;
  int64_t n = 0;
  if (obj.is_list()) {
    n = static_cast<int64_t>(obj.list->size());
  } else if (obj.is_string()) {
    cps = code_points(obj.s);
    n = static_cast<int64_t>(cps.size());
  } else {
    throw make_error("'", type_name(obj), "' object is not subscriptable");
  }
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) x += n;
    if (step > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  const int64_t b = clamp(as_opt(start, "start"), step > 0 ? 0 : n - 1);
  const int64_t e = clamp(as_opt(stop, "stop"), step > 0 ? n : -1);
  std::string s;
  for (int64_t k = b; step > 0 ? k < e : k > e; k += step) {
    if (obj.is_list()) {
      items.push_back((*obj.list)[static_cast<std::size_t>(k)]);
    } else {
      s += cps[static_cast<std::size_t>(k)];
    }
  }
  if (obj.is_string()) return Value::string(std::move(s));
  return Value::make_list(std::move(items), obj.is_tuple);
}

// ---- filters ----

namespace {

using Filter = Value (*)(Interpreter&, const Value&, Args&);

// jinja2's int, float, indent and attr filters fail on an undefined value (the others treat it as empty).
void require_defined(const Value& v) {
  if (v.is_undefined()) throw make_error(v.s.empty() ? std::string("value is undefined") : v.s);
}

Value f_length(Interpreter&, const Value& v, Args&) {
  switch (v.kind) {
    case Kind::kUndefined: return Value::integer(0);
    case Kind::kString: return Value::integer(static_cast<int64_t>(utf8_length(v.s)));
    case Kind::kList: return Value::integer(static_cast<int64_t>(v.list->size()));
    case Kind::kDict: return Value::integer(static_cast<int64_t>(v.dict->items.size()));
    default: throw make_error("object of type '", type_name(v), "' has no len()");
  }
}

Value f_tojson(Interpreter&, const Value& v, Args& a) {
  JsonStyle st;
  const Value indent = arg_or(a, 1, "indent", Value::none());
  if (indent.kind == Kind::kInt) {
    st.indent_set = true;
    st.indent = std::string(static_cast<std::size_t>(std::clamp<int64_t>(indent.i, 0, 64)), ' ');
  } else if (indent.is_string()) {
    st.indent_set = true;
    st.indent = indent.s;
  }
  if (st.indent_set) st.item_sep = ",";
  const Value seps = arg_or(a, 2, "separators", Value::none());
  if (seps.is_list() && seps.list->size() == 2) {
    st.item_sep = need_string((*seps.list)[0], "tojson separators");
    st.key_sep = need_string((*seps.list)[1], "tojson separators");
  }
  st.sort_keys = truthy(arg_or(a, 3, "sort_keys", Value::boolean(false)));
  const Value ensure_ascii = arg_or(a, 0, "ensure_ascii", Value::boolean(false));
  if (truthy(ensure_ascii)) throw make_error("tojson(ensure_ascii=true) is not supported");
  return Value::string(to_json(v, st));
}

Value f_trim(Interpreter&, const Value& v, Args& a) {
  return Value::string(strip(to_str(v), arg_or(a, 0, "chars", Value::none()), true, true));
}

Value f_first(Interpreter&, const Value& v, Args&) {
  List items = iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}
Value f_last(Interpreter&, const Value& v, Args&) {
  List items = iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}
Value f_lower(Interpreter&, const Value& v, Args&) { return Value::string(map_case(to_str(v), 0)); }
Value f_upper(Interpreter&, const Value& v, Args&) { return Value::string(map_case(to_str(v), 1)); }
Value f_title(Interpreter&, const Value& v, Args&) { return Value::string(title_case(to_str(v))); }
Value f_capitalize(Interpreter& in, const Value& v, Args& a) {
  return string_method(Value::string(to_str(v)), "capitalize").fn->fn(in, a);
}
Value f_replace(Interpreter& in, const Value& v, Args& a) {
  return string_method(Value::string(to_str(v)), "replace").fn->fn(in, a);
}
Value f_join(Interpreter&, const Value& v, Args& a) {
  const std::string sep = to_str(arg_or(a, 0, "d", Value::string("")));
  const Value attr = arg_or(a, 1, "attribute", Value::none());
  std::string out;
  bool first = true;
  for (const Value& x : iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += to_str(attr.is_none() ? x : item_attribute(x, to_str(attr)));
  }
  return Value::string(out);
}
Value f_default(Interpreter&, const Value& v, Args& a) {
  const bool boolean = truthy(arg_or(a, 1, "boolean", Value::boolean(false)));
  if (v.is_undefined() || (boolean && !truthy(v))) return arg_or(a, 0, "default_value", Value::string(""));
  return v;
}
Value f_string(Interpreter&, const Value& v, Args&) { return Value::string(to_str(v)); }
Value f_int(Interpreter&, const Value& v, Args& a) {
  require_defined(v);
  int64_t x = 0;
  if (to_int(v, x)) return Value::integer(x);
  return arg_or(a, 0, "default", Value::integer(0));
}
Value f_float(Interpreter&, const Value& v, Args& a) {
  require_defined(v);
  if (v.is_number()) return Value::number(v.as_double());
  if (v.is_string()) {
    const std::string t = strip(v.s, Value::none(), true, true);
    char* end = nullptr;
    const double d = std::strtod(t.c_str(), &end);
    if (!t.empty() && *end == 0) return Value::number(d);
  }
  return arg_or(a, 0, "default", Value::number(0));
}
Value f_list(Interpreter&, const Value& v, Args&) { return Value::make_list(iterate(v)); }
Value f_items(Interpreter& in, const Value& v, Args& a) {
  if (v.is_undefined()) return Value::make_list({});
  if (!v.is_dict()) throw make_error("items filter: can only get item pairs from a mapping");
  return dict_method(v, "items").fn->fn(in, a);
}
Value f_safe(Interpreter&, const Value& v, Args&) { return v; }
Value f_attr(Interpreter&, const Value& v, Args& a) {
  require_defined(v);
  const Value* name = arg(a, 0, "name");
  if (!name) throw make_error("attr filter needs an attribute name");
  // Python attributes only: a dict's keys are not attributes (its methods are).
  if (v.is_dict() && !v.is_namespace) return dict_method(v, need_string(*name, "attr"));
  if (v.is_string()) return string_method(v, need_string(*name, "attr"));
  return Value::undefined("'" + type_name(v) + " object' has no attribute " + repr(*name));
}
Value f_escape(Interpreter&, const Value& v, Args&) {
  std::string out;
  for (char c : to_str(v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value::string(out);
}
Value f_indent(Interpreter&, const Value& v, Args& a) {
  require_defined(v);
  const Value w = arg_or(a, 0, "width", Value::integer(4));
  const std::string pad = w.is_string() ? w.s : std::string(static_cast<std::size_t>(std::clamp<int64_t>(w.i, 0, 256)), ' ');
  const bool first = truthy(arg_or(a, 1, "first", Value::boolean(false)));
  const bool blank = truthy(arg_or(a, 2, "blank", Value::boolean(false)));
  const std::string s = to_str(v);
  std::vector<std::string> lines = split(s, Value::string("\n"), -1);
  std::string out;
  for (std::size_t k = 0; k < lines.size(); ++k) {
    if (k) out += '\n';
    const bool indent = (k > 0 || first) && (blank || !lines[k].empty());
    if (indent) out += pad;
    out += lines[k];
  }
  return Value::string(out);
}

// The test a select/reject/selectattr/rejectattr call names, applied to one value.
bool run_test(Interpreter& in, const Args& a, std::size_t name_index, const Value& x) {
  if (a.pos.size() <= name_index) return truthy(x);
  const std::string name = need_string(a.pos[name_index], "test name");
  Args rest;
  rest.pos.assign(a.pos.begin() + static_cast<std::ptrdiff_t>(name_index) + 1, a.pos.end());
  return apply_test(in, name, x, rest);
}

Value select_impl(Interpreter& in, const Value& v, Args& a, bool by_attr, bool keep) {
  List out;
  for (const Value& x : iterate(v)) {
    in.step();
    const Value probe = by_attr ? item_attribute(x, need_string(a.pos.at(0), "attribute")) : x;
    if (run_test(in, a, by_attr ? 1 : 0, probe) == keep) out.push_back(x);
  }
  return Value::make_list(std::move(out));
}
Value f_select(Interpreter& in, const Value& v, Args& a) { return select_impl(in, v, a, false, true); }
Value f_reject(Interpreter& in, const Value& v, Args& a) { return select_impl(in, v, a, false, false); }
Value f_selectattr(Interpreter& in, const Value& v, Args& a) {
  if (a.pos.empty()) throw make_error("selectattr needs an attribute name");
  return select_impl(in, v, a, true, true);
}
Value f_rejectattr(Interpreter& in, const Value& v, Args& a) {
  if (a.pos.empty()) throw make_error("rejectattr needs an attribute name");
  return select_impl(in, v, a, true, false);
}
Value f_map(Interpreter& in, const Value& v, Args& a) {
  List out;
  const Value* attr = arg(a, 99, "attribute");
  for (const Value& x : iterate(v)) {
    in.step();
    if (attr) {
      Value got = item_attribute(x, to_str(*attr));
      if (got.is_undefined()) {
        if (const Value* d = arg(a, 99, "default")) got = *d;
      }
      out.push_back(got);
    } else {
      if (a.pos.empty()) throw make_error("map needs a filter name or attribute=");
      Args rest;
      rest.pos.assign(a.pos.begin() + 1, a.pos.end());
      rest.kw = a.kw;
      out.push_back(apply_filter(in, need_string(a.pos[0], "filter name"), x, rest));
    }
  }
  return Value::make_list(std::move(out));
}
Value f_unique(Interpreter& in, const Value& v, Args&) {
  List out;
  for (const Value& x : iterate(v)) {
    in.step(static_cast<int64_t>(out.size()) + 1);
    bool seen = false;
    for (const Value& y : out) {
      // jinja2 compares strings case-insensitively by default
      if (x.is_string() && y.is_string() ? map_case(x.s, 0) == map_case(y.s, 0) : equal(x, y)) {
        seen = true;
        break;
      }
    }
    if (!seen) out.push_back(x);
  }
  return Value::make_list(std::move(out));
}
Value f_reverse(Interpreter&, const Value& v, Args&) {
  if (v.is_string()) {
    auto cps = code_points(v.s);
    std::string out;
    for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
    return Value::string(out);
  }
  List items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::make_list(std::move(items));
}
Value f_sort(Interpreter& in, const Value& v, Args& a) {
  List items = iterate(v);
  in.step(static_cast<int64_t>(items.size()) * 20);
  const bool rev = truthy(arg_or(a, 0, "reverse", Value::boolean(false)));
  const bool cs = truthy(arg_or(a, 1, "case_sensitive", Value::boolean(false)));
  const Value attr = arg_or(a, 2, "attribute", Value::none());
  auto key = [&](const Value& x) {
    Value k = attr.is_none() ? x : item_attribute(x, to_str(attr));
    if (!cs && k.is_string()) k = Value::string(map_case(k.s, 0));
    return k;
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return rev ? less(key(y), key(x)) : less(key(x), key(y));
  });
  return Value::make_list(std::move(items));
}
Value f_round(Interpreter&, const Value& v, Args& a) {
  if (!v.is_number()) throw make_error("round filter expects a number, got ", type_name(v));
  const int64_t precision = int_arg(a, 0, "precision", 0);
  const std::string method = to_str(arg_or(a, 1, "method", Value::string("common")));
  if (method == "common" && v.kind != Kind::kFloat && precision >= 0) return v;  // round(int) is int
  if (method == "common" && precision >= 0 && precision <= 17 && std::isfinite(v.f)) {
    // Python's round() rounds the exact binary value (2.675 -> 2.67), as printf does.
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), v.f);
    return Value::number(std::strtod(buf, nullptr));
  }
  const double scale = std::pow(10.0, static_cast<double>(std::clamp<int64_t>(precision, -300, 300)));
  double x = v.as_double() * scale;
  // "common" is Python's round(): halves go to the even neighbour.
  x = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);
  return Value::number(x / scale);
}
Value f_abs(Interpreter&, const Value& v, Args&) {
  if (v.kind == Kind::kFloat) return Value::number(std::fabs(v.f));
  if (v.kind == Kind::kInt || v.kind == Kind::kBool) {
    const int64_t x = v.kind == Kind::kBool ? v.b : v.i;
    if (x == INT64_MIN) throw make_error("integer overflow");
    return Value::integer(x < 0 ? -x : x);
  }
  throw make_error("bad operand type for abs(): '", type_name(v), "'");
}
Value f_wordcount(Interpreter&, const Value& v, Args&) {
  return Value::integer(static_cast<int64_t>(split(to_str(v), Value::none(), -1).size()));
}
Value f_sum(Interpreter&, const Value& v, Args& a) {
  Value total = arg_or(a, 1, "start", Value::integer(0));
  const Value attr = arg_or(a, 0, "attribute", Value::none());
  for (const Value& x : iterate(v)) {
    const Value y = attr.is_none() ? x : item_attribute(x, to_str(attr));
    if (!y.is_number() || !total.is_number()) throw make_error("sum filter expects numbers");
    if (total.kind == Kind::kFloat || y.kind == Kind::kFloat) {
      total = Value::number(total.as_double() + y.as_double());
    } else {
      int64_t r = 0;
      if (__builtin_add_overflow(total.i, y.kind == Kind::kBool ? y.b : y.i, &r)) throw make_error("integer overflow");
      total = Value::integer(r);
    }
  }
  return total;
}
Value min_max(const Value& v, bool want_max) {
  List items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  Value best = items[0];
  for (const Value& x : items) {
    if (want_max ? less(best, x) : less(x, best)) best = x;
  }
  return best;
}
Value f_max(Interpreter&, const Value& v, Args&) { return min_max(v, true); }
Value f_min(Interpreter&, const Value& v, Args&) { return min_max(v, false); }
Value f_dictsort(Interpreter& in, const Value& v, Args&) {
  if (!v.is_dict()) throw make_error("dictsort expects a mapping");
  Args none;
  Value pairs = dict_method(v, "items").fn->fn(in, none);
  std::stable_sort(pairs.list->begin(), pairs.list->end(), [](const Value& x, const Value& y) {
    return map_case((*x.list)[0].s, 0) < map_case((*y.list)[0].s, 0);
  });
  return pairs;
}

const std::map<std::string, Filter>& filters() {
  static const std::map<std::string, Filter> table = {
      {"length", f_length},     {"count", f_length},     {"tojson", f_tojson},
      {"trim", f_trim},         {"first", f_first},      {"last", f_last},
      {"lower", f_lower},       {"upper", f_upper},      {"title", f_title},
      {"capitalize", f_capitalize}, {"replace", f_replace}, {"join", f_join},
      {"default", f_default},   {"d", f_default},        {"string", f_string},
      {"int", f_int},           {"float", f_float},      {"list", f_list},
      {"items", f_items},       {"safe", f_safe},        {"escape", f_escape},
      {"e", f_escape},          {"indent", f_indent},    {"map", f_map},
      {"select", f_select},     {"reject", f_reject},    {"selectattr", f_selectattr},
      {"rejectattr", f_rejectattr}, {"unique", f_unique}, {"reverse", f_reverse},
      {"sort", f_sort},         {"round", f_round},      {"abs", f_abs},
      {"wordcount", f_wordcount}, {"sum", f_sum},        {"max", f_max},
      {"min", f_min},           {"dictsort", f_dictsort}, {"attr", f_attr},
  };
  return table;
}

// ---- tests ----

using Test = bool (*)(const Value&, const Args&);

bool integral(const Value& v, int64_t& out) {
  if (v.kind == Kind::kInt) {
    out = v.i;
    return true;
  }
  if (v.kind == Kind::kBool) {
    out = v.b;
    return true;
  }
  return false;
}

const std::map<std::string, Test>& tests() {
  static const std::map<std::string, Test> table = {
      {"defined", [](const Value& v, const Args&) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v, const Args&) { return v.is_undefined(); }},
      {"none", [](const Value& v, const Args&) { return v.is_none(); }},
      {"string", [](const Value& v, const Args&) { return v.is_string(); }},
      {"mapping", [](const Value& v, const Args&) { return v.is_dict(); }},
      {"iterable", [](const Value& v, const Args&) { return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined(); }},
      {"sequence", [](const Value& v, const Args&) { return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined(); }},
      {"number", [](const Value& v, const Args&) { return v.is_number(); }},
      {"integer", [](const Value& v, const Args&) { return v.kind == Kind::kInt; }},
      {"float", [](const Value& v, const Args&) { return v.kind == Kind::kFloat; }},
      {"boolean", [](const Value& v, const Args&) { return v.kind == Kind::kBool; }},
      {"true", [](const Value& v, const Args&) { return v.kind == Kind::kBool && v.b; }},
      {"false", [](const Value& v, const Args&) { return v.kind == Kind::kBool && !v.b; }},
      {"callable", [](const Value& v, const Args&) { return v.kind == Kind::kCallable; }},
      {"lower", [](const Value& v, const Args&) { return v.is_string() && map_case(v.s, 0) == v.s; }},
      {"upper", [](const Value& v, const Args&) { return v.is_string() && map_case(v.s, 1) == v.s; }},
      {"odd", [](const Value& v, const Args&) {
         int64_t x = 0;
         if (!integral(v, x)) throw make_error("odd test expects an integer");
         return x % 2 != 0;
       }},
      {"even", [](const Value& v, const Args&) {
         int64_t x = 0;
         if (!integral(v, x)) throw make_error("even test expects an integer");
         return x % 2 == 0;
       }},
      {"divisibleby", [](const Value& v, const Args& a) {
         int64_t x = 0;
         int64_t y = 0;
         if (!integral(v, x) || a.pos.empty() || !integral(a.pos[0], y)) {
           throw make_error("divisibleby expects integers");
         }
         if (y == 0) throw make_error("integer division or modulo by zero");
         return x % y == 0;
       }},
      {"equalto", [](const Value& v, const Args& a) { return !a.pos.empty() && equal(v, a.pos[0]); }},
      {"eq", [](const Value& v, const Args& a) { return !a.pos.empty() && equal(v, a.pos[0]); }},
      {"==", [](const Value& v, const Args& a) { return !a.pos.empty() && equal(v, a.pos[0]); }},
      {"ne", [](const Value& v, const Args& a) { return a.pos.empty() || !equal(v, a.pos[0]); }},
      {"!=", [](const Value& v, const Args& a) { return a.pos.empty() || !equal(v, a.pos[0]); }},
      {"sameas", [](const Value& v, const Args& a) {
         if (a.pos.empty()) return false;
         const Value& o = a.pos[0];
         if (v.kind != o.kind) return false;
         if (v.is_list()) return v.list == o.list;
         if (v.is_dict()) return v.dict == o.dict;
         return equal(v, o);
       }},
      {"in", [](const Value& v, const Args& a) {
         if (a.pos.empty()) return false;
         for (const Value& x : iterate(a.pos[0])) {
           if (equal(x, v)) return true;
         }
         return a.pos[0].is_string() && v.is_string() && a.pos[0].s.find(v.s) != std::string::npos;
       }},
  };
  return table;
}

// ---- globals ----

Value g_range(Interpreter& in, Args& a) {
  int64_t start = 0;
  int64_t stop = 0;
  int64_t step = 1;
  auto num = [](const Value& v) {
    int64_t x = 0;
    if (!integral(v, x)) throw make_error("range() expects integers, got ", type_name(v));
    return x;
  };
  if (a.pos.size() == 1) {
    stop = num(a.pos[0]);
  } else if (a.pos.size() >= 2) {
    start = num(a.pos[0]);
    stop = num(a.pos[1]);
    if (a.pos.size() >= 3) step = num(a.pos[2]);
  } else {
    throw make_error("range expected at least 1 argument");
  }
  if (step == 0) throw make_error("range() arg 3 must not be zero");
  // jinja2's sandbox refuses ranges of more than 100000 items (MAX_RANGE).
  const double count = std::ceil((static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step));
  if (count > 100000) throw make_error("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  List out;
  for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) out.push_back(Value::integer(k));
  in.step(static_cast<int64_t>(out.size()));
  return Value::make_list(std::move(out));
}

}  // namespace

bool has_filter(const std::string& name) { return filters().count(name) > 0; }
bool has_test(const std::string& name) { return tests().count(name) > 0; }

Value apply_filter(Interpreter& in, const std::string& name, const Value& v, Args& args) {
  auto it = filters().find(name);
  if (it == filters().end()) throw make_error("No filter named '", name, "'");
  return it->second(in, v, args);
}

bool apply_test(Interpreter&, const std::string& name, const Value& v, Args& args) {
  auto it = tests().find(name);
  if (it == tests().end()) throw make_error("No test named '", name, "'");
  return it->second(v, args);
}

void add_globals(Dict& g) {
  g.set("range", Value::callable("range", g_range));
  g.set("namespace", Value::callable("namespace", [](Interpreter& in, Args& a) {
          Value ns = Value::make_dict();
          ns.is_namespace = true;
          in.track_namespace(ns.dict);
          for (const Value& p : a.pos) {
            if (!p.is_dict()) throw make_error("namespace() positional arguments must be mappings");
            for (const auto& [k, v] : p.dict->items) ns.dict->set(k, v);
          }
          for (const auto& [k, v] : a.kw) ns.dict->set(k, v);
          return ns;
        }));
  g.set("dict", Value::callable("dict", [](Interpreter&, Args& a) {
          Value d = Value::make_dict();
          for (const Value& p : a.pos) {
            if (!p.is_dict()) throw make_error("dict() positional arguments must be mappings");
            for (const auto& [k, v] : p.dict->items) d.dict->set(k, v);
          }
          for (const auto& [k, v] : a.kw) d.dict->set(k, v);
          update_nest(d);
          return d;
        }));
  g.set("raise_exception", Value::callable("raise_exception", [](Interpreter&, Args& a) -> Value {
          throw make_error("chat template raised an exception: ",
                           a.pos.empty() ? std::string() : to_str(a.pos[0]));
        }));
  g.set("strftime_now", Value::callable("strftime_now", [](Interpreter&, Args& a) {
          const std::string fmt = a.pos.empty() ? std::string() : to_str(a.pos[0]);
          if (fmt.size() > 256) throw make_error("strftime_now: format too long");
          const std::time_t now = std::time(nullptr);
          std::tm tm{};
          localtime_r(&now, &tm);
          char buf[1024];
          const std::size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
          return Value::string(std::string(buf, n));
        }));
}

}  // namespace il::text::jinja
