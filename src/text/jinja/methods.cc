// Methods of str and dict, attribute and item access, slicing and iteration, as jinja2's
// immutable sandbox resolves them over Python objects.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "text/jinja/builtins_util.h"
#include "text/jinja/strings.h"

namespace il::text::jinja {

using Kind = Value::Kind;

namespace {

Value bound(std::string name, NativeFn fn) { return Value::callable(std::move(name), std::move(fn)); }

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

Value str_list(const std::vector<std::string>& parts) {
  List out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.push_back(Value::string(p));
  return Value::make_list(std::move(out));
}

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
}  // namespace il::text::jinja
