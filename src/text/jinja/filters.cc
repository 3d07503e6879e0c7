// jinja2's filters and tests that chat templates use, with Python's semantics.
#include <algorithm>
#include <cmath>
#include <map>

#include "text/jinja/builtins_util.h"
#include "text/jinja/strings.h"

namespace il::text::jinja {
namespace {

using Kind = Value::Kind;


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

}  // namespace il::text::jinja
