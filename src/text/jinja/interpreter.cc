#include "text/jinja/interpreter.h"

#include <cmath>
#include <limits>

namespace il::text::jinja {

namespace {

Value binary_arith(const std::string& op, const Value& a, const Value& b);

[[noreturn]] void undefined_error(const Value& v) {
  throw make_error(v.s.empty() ? std::string("value is undefined") : v.s);
}

}  // namespace

Interpreter::Interpreter(std::string source_name, Limits limits)
    : source_name_(std::move(source_name)), limits_(limits) {}

void Interpreter::fail_at(int line, int col, const std::string& what) const {
  throw LocatedError(source_name_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + what);
}

Interpreter::DepthGuard::DepthGuard(Interpreter& in) : in_(in) {
  if (++in_.depth_ > in_.limits_.max_depth) {
    --in_.depth_;
    throw make_error("the template nests more than ", in_.limits_.max_depth,
                     " statements, expressions and macro calls deep");
  }
}

void Interpreter::step(int64_t n) {
  steps_ += n;
  if (steps_ > limits_.max_steps) {
    throw make_error("the template does too much work (more than ", limits_.max_steps,
                     " steps); refusing to continue");
  }
}

std::string Interpreter::render(const Body& body, const Value& vars) {
  auto root = std::make_shared<Dict>();
  add_globals(*root);
  for (const auto& [k, v] : vars.dict->items) root->set(k, v);
  scopes_ = {root};
  steps_ = 0;
  depth_ = 0;
  std::string out;
  auto release = [this] {
    for (auto& ns : namespaces_) ns->items.clear();
    namespaces_.clear();
    scopes_.clear();
  };
  try {
    exec_body(body, out);
  } catch (...) {
    release();
    throw;
  }
  release();
  return out;
}

void Interpreter::append(std::string& out, const std::string& text) {
  if (out.size() + text.size() > limits_.max_output_bytes) {
    throw make_error("the template output exceeds ", limits_.max_output_bytes, " bytes");
  }
  out += text;
}

Value Interpreter::lookup(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    if (const Value* v = (*it)->find(name)) return *v;
  }
  return Value::undefined("'" + name + "' is undefined");
}

void Interpreter::assign(const std::string& name, Value v) { scopes_.back()->set(name, std::move(v)); }

Interpreter::Flow Interpreter::exec_body(const Body& body, std::string& out) {
  for (const auto& s : body) {
    const Flow f = exec(*s, out);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, std::string& out) {
  step();
  DepthGuard guard(*this);
  try {
    switch (s.kind) {
      case Stmt::Kind::kText: append(out, s.text); break;
      case Stmt::Kind::kOutput: append(out, to_str(eval(*s.expr))); break;
      case Stmt::Kind::kIf:
        for (std::size_t k = 0; k < s.conds.size(); ++k) {
          if (truthy(eval(*s.conds[k]))) return exec_body(s.bodies[k], out);
        }
        if (s.bodies.size() > s.conds.size()) return exec_body(s.bodies.back(), out);
        break;
      case Stmt::Kind::kFor: exec_for(s, out); break;
      case Stmt::Kind::kSet: exec_set(s); break;
      case Stmt::Kind::kSetBlock: {
        std::string captured;
        exec_body(s.bodies[0], captured);
        assign(s.targets[0], Value::string(std::move(captured)));
        break;
      }
      case Stmt::Kind::kMacro: assign(s.text, make_macro(s)); break;
      case Stmt::Kind::kBreak: return Flow::kBreak;
      case Stmt::Kind::kContinue: return Flow::kContinue;
    }
  } catch (const LocatedError&) {
    throw;
  } catch (const il::Error& e) {
    fail_at(s.line, s.col, e.what());
  }
  return Flow::kNormal;
}

void Interpreter::exec_for(const Stmt& s, std::string& out) {
  const Value seq_value = eval(*s.expr);
  if (!seq_value.is_undefined() && !seq_value.is_list() && !seq_value.is_dict() && !seq_value.is_string()) {
    throw make_error("'", type_name(seq_value), "' object is not iterable");
  }
  List items = iterate(seq_value);
  auto bind = [&](Dict& frame, const Value& item) {
    if (s.targets.size() == 1) {
      frame.set(s.targets[0], item);
      return;
    }
    const List parts = iterate(item);
    if (parts.size() != s.targets.size()) {
      throw make_error("cannot unpack ", parts.size(), " values into ", s.targets.size(), " names");
    }
    for (std::size_t k = 0; k < parts.size(); ++k) frame.set(s.targets[k], parts[k]);
  };
  if (s.filter) {  // `for x in xs if cond`: the loop sees only the items that pass
    List kept;
    for (const Value& item : items) {
      step();
      auto frame = std::make_shared<Dict>();
      bind(*frame, item);
      scopes_.push_back(frame);
      const bool keep = truthy(eval(*s.filter));
      scopes_.pop_back();
      if (keep) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    if (s.bodies.size() > 1) exec_body(s.bodies[1], out);
    return;
  }
  const int64_t n = static_cast<int64_t>(items.size());
  // loop.cycle(a, b, ...): one callable for the whole loop, reading the current position.
  auto position = std::make_shared<int64_t>(0);
  const Value cycle = Value::callable("cycle", [position](Interpreter&, Args& a) {
    if (a.pos.empty()) throw make_error("no items for cycling given");
    return a.pos[static_cast<std::size_t>(*position) % a.pos.size()];
  });
  for (int64_t k = 0; k < n; ++k) {
    step();
    auto frame = std::make_shared<Dict>();
    Value loop = Value::make_dict();
    Dict& l = *loop.dict;
    l.items.reserve(12);
    l.items.emplace_back("index0", Value::integer(k));
    l.items.emplace_back("index", Value::integer(k + 1));
    l.items.emplace_back("revindex", Value::integer(n - k));
    l.items.emplace_back("revindex0", Value::integer(n - k - 1));
    l.items.emplace_back("first", Value::boolean(k == 0));
    l.items.emplace_back("last", Value::boolean(k == n - 1));
    l.items.emplace_back("length", Value::integer(n));
    l.items.emplace_back("depth", Value::integer(1));
    l.items.emplace_back("depth0", Value::integer(0));
    if (k > 0) l.items.emplace_back("previtem", items[k - 1]);
    if (k + 1 < n) l.items.emplace_back("nextitem", items[k + 1]);
    *position = k;
    l.items.emplace_back("cycle", cycle);
    frame->set("loop", loop);
    bind(*frame, items[k]);
    scopes_.push_back(frame);
    Flow f;
    try {
      f = exec_body(s.bodies[0], out);
    } catch (...) {
      scopes_.pop_back();
      throw;
    }
    scopes_.pop_back();
    if (f == Flow::kBreak) break;
  }
}

void Interpreter::exec_set(const Stmt& s) {
  Value v = eval(*s.expr);
  if (!s.attr.empty()) {
    Value ns = lookup(s.targets[0]);
    if (!ns.is_dict() || !ns.is_namespace) {
      throw make_error("cannot assign attribute on non-namespace object '", s.targets[0], "'");
    }
    ns.dict->set(s.attr, std::move(v));
    return;
  }
  if (s.targets.size() == 1) {
    assign(s.targets[0], std::move(v));
    return;
  }
  const List parts = iterate(v);
  if (parts.size() != s.targets.size()) {
    throw make_error("cannot unpack ", parts.size(), " values into ", s.targets.size(), " names");
  }
  for (std::size_t k = 0; k < parts.size(); ++k) assign(s.targets[k], parts[k]);
}

Value Interpreter::make_macro(const Stmt& s) {
  const Stmt* macro = &s;
  return Value::callable(s.text, [macro](Interpreter& in, Args& args) -> Value {
    if (in.call_depth_ >= in.limits_.max_call_depth) {
      throw make_error("macro calls nested more than ", in.limits_.max_call_depth, " deep");
    }
    auto frame = std::make_shared<Dict>();
    const auto& params = macro->params;
    if (args.pos.size() > params.size()) {
      throw make_error("macro '", macro->text, "' takes ", params.size(), " arguments, got ",
                       args.pos.size());
    }
    for (std::size_t k = 0; k < params.size(); ++k) {
      if (k < args.pos.size()) {
        frame->set(params[k].first, args.pos[k]);
      } else if (params[k].second) {
        frame->set(params[k].first, in.eval(*params[k].second));
      } else {
        frame->set(params[k].first, Value::undefined("parameter '" + params[k].first + "' was not provided"));
      }
    }
    for (auto& [key, v] : args.kw) {
      bool known = false;
      for (const auto& p : params) known = known || p.first == key;
      if (!known) throw make_error("macro '", macro->text, "' has no parameter named '", key, "'");
      frame->set(key, v);
    }
    std::vector<std::shared_ptr<Dict>> saved = {in.scopes_.front(), frame};
    std::swap(saved, in.scopes_);
    ++in.call_depth_;
    std::string out;
    try {
      in.exec_body(macro->bodies[0], out);
    } catch (...) {
      --in.call_depth_;
      std::swap(saved, in.scopes_);
      throw;
    }
    --in.call_depth_;
    std::swap(saved, in.scopes_);
    return Value::string(std::move(out));
  });
}

Value Interpreter::call(const Value& fn, Args& args) {
  if (fn.is_undefined()) undefined_error(fn);
  if (fn.kind != Value::Kind::kCallable) throw make_error("'", type_name(fn), "' object is not callable");
  return fn.fn->fn(*this, args);
}

Value Interpreter::eval(const Expr& e) {
  DepthGuard guard(*this);
  switch (e.kind) {
    case Expr::Kind::kLiteral: return e.literal;
    case Expr::Kind::kName: return lookup(e.name);
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      List items;
      items.reserve(e.kids.size());
      for (const auto& k : e.kids) items.push_back(eval(*k));
      return Value::make_list(std::move(items), e.kind == Expr::Kind::kTuple);
    }
    case Expr::Kind::kDict: {
      Value d = Value::make_dict();
      for (std::size_t k = 0; k + 1 < e.kids.size(); k += 2) {
        const Value key = eval(*e.kids[k]);
        if (!key.is_string()) throw make_error("dict literal keys must be strings here");
        d.dict->set(key.s, eval(*e.kids[k + 1]));
      }
      update_nest(d);
      return d;
    }
    case Expr::Kind::kAttr: {
      const Value obj = eval(*e.kids[0]);
      if (obj.is_undefined()) undefined_error(obj);
      return get_attr(obj, e.name);
    }
    case Expr::Kind::kIndex: {
      const Value obj = eval(*e.kids[0]);
      if (obj.is_undefined()) undefined_error(obj);
      return get_item(obj, eval(*e.kids[1]));
    }
    case Expr::Kind::kSlice: {
      const Value obj = eval(*e.kids[0]);
      if (obj.is_undefined()) undefined_error(obj);
      auto part = [&](int k) { return e.kids[k] ? eval(*e.kids[k]) : Value::none(); };
      return slice(obj, part(1), part(2), part(3));
    }
    case Expr::Kind::kCall: {
      const Value fn = eval(*e.kids[0]);
      Args args;
      for (std::size_t k = 1; k < e.kids.size(); ++k) args.pos.push_back(eval(*e.kids[k]));
      for (const auto& [key, x] : e.kwargs) args.kw.emplace_back(key, eval(*x));
      return call(fn, args);
    }
    case Expr::Kind::kFilter:
    case Expr::Kind::kTest: {
      const Value v = eval(*e.kids[0]);
      Args args;
      for (std::size_t k = 1; k < e.kids.size(); ++k) args.pos.push_back(eval(*e.kids[k]));
      for (const auto& [key, x] : e.kwargs) args.kw.emplace_back(key, eval(*x));
      if (e.kind == Expr::Kind::kFilter) return apply_filter(*this, e.name, v, args);
      return Value::boolean(apply_test(*this, e.name, v, args) != e.negated);
    }
    case Expr::Kind::kUnary: {
      const Value v = eval(*e.kids[0]);
      if (e.name == "not") return Value::boolean(!truthy(v));
      if (v.is_undefined()) undefined_error(v);
      if (!v.is_number()) throw make_error("bad operand type for unary ", e.name, ": '", type_name(v), "'");
      if (e.name == "+") return v.kind == Value::Kind::kBool ? Value::integer(v.b) : v;
      if (v.kind == Value::Kind::kFloat) return Value::number(-v.f);
      const int64_t x = v.kind == Value::Kind::kBool ? v.b : v.i;
      if (x == std::numeric_limits<int64_t>::min()) throw make_error("integer overflow");
      return Value::integer(-x);
    }
    case Expr::Kind::kBinary: return eval_binary(e);
    case Expr::Kind::kCond:
      if (truthy(eval(*e.kids[0]))) return eval(*e.kids[1]);
      return e.kids[2] ? eval(*e.kids[2]) : Value::undefined("the conditional expression has no else");
  }
  return Value::undefined();
}

namespace {

bool contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case Value::Kind::kUndefined: return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        throw make_error("'in <string>' requires string as left operand, not ", type_name(item));
      }
      return container.s.find(item.s) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& x : *container.list) {
        if (equal(x, item)) return true;
      }
      return false;
    case Value::Kind::kDict: return item.is_string() && container.dict->find(item.s) != nullptr;
    default: throw make_error("argument of type '", type_name(container), "' is not iterable");
  }
}

int64_t as_int(const Value& v) { return v.kind == Value::Kind::kBool ? v.b : v.i; }

Value repeat(const Value& seq, int64_t times, std::size_t max_bytes) {
  if (times < 0) times = 0;
  if (seq.is_string()) {
    if (!seq.s.empty() && static_cast<uint64_t>(times) > max_bytes / seq.s.size()) {
      throw make_error("string repetition result too large");
    }
    std::string out;
    out.reserve(seq.s.size() * static_cast<std::size_t>(times));
    for (int64_t k = 0; k < times; ++k) out += seq.s;
    return Value::string(std::move(out));
  }
  if (!seq.list->empty() && static_cast<uint64_t>(times) > (1u << 20) / seq.list->size()) {
    throw make_error("list repetition result too large");
  }
  List out;
  for (int64_t k = 0; k < times; ++k) out.insert(out.end(), seq.list->begin(), seq.list->end());
  return Value::make_list(std::move(out), seq.is_tuple);
}

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  throw make_error("unsupported operand type(s) for ", op, ": '", type_name(a), "' and '",
                   type_name(b), "'");
}

Value binary_arith(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) return Value::string(a.s + b.s);
    if (a.is_list() && b.is_list() && a.is_tuple == b.is_tuple) {
      List out = *a.list;
      out.insert(out.end(), b.list->begin(), b.list->end());
      return Value::make_list(std::move(out), a.is_tuple);
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && (b.kind == Value::Kind::kInt || b.kind == Value::Kind::kBool)) {
      return repeat(a, as_int(b), std::size_t{64} << 20);
    }
    if ((b.is_string() || b.is_list()) && (a.kind == Value::Kind::kInt || a.kind == Value::Kind::kBool)) {
      return repeat(b, as_int(a), std::size_t{64} << 20);
    }
  }
  if (op == "%" && a.is_string()) {
    throw make_error("'%' string formatting is not supported in chat templates here");
  }
  if (!a.is_number() || !b.is_number()) unsupported(op, a, b);
  const bool ints = a.kind != Value::Kind::kFloat && b.kind != Value::Kind::kFloat;
  if (op == "/") {
    if (b.as_double() == 0) throw make_error("division by zero");
    return Value::number(a.as_double() / b.as_double());
  }
  if (ints) {
    const int64_t x = as_int(a);
    const int64_t y = as_int(b);
    int64_t r = 0;
    if (op == "+") {
      if (__builtin_add_overflow(x, y, &r)) throw make_error("integer overflow");
      return Value::integer(r);
    }
    if (op == "-") {
      if (__builtin_sub_overflow(x, y, &r)) throw make_error("integer overflow");
      return Value::integer(r);
    }
    if (op == "*") {
      if (__builtin_mul_overflow(x, y, &r)) throw make_error("integer overflow");
      return Value::integer(r);
    }
    if (op == "//" || op == "%") {
      if (y == 0) throw make_error("integer division or modulo by zero");
      if (x == std::numeric_limits<int64_t>::min() && y == -1) throw make_error("integer overflow");
      int64_t q = x / y;
      int64_t m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors toward negative infinity
        --q;
        m += y;
      }
      return Value::integer(op == "//" ? q : m);
    }
    if (op == "**") {
      if (y < 0) return Value::number(std::pow(double(x), double(y)));
      int64_t acc = 1;
      for (int64_t k = 0; k < y; ++k) {
        if (__builtin_mul_overflow(acc, x, &acc)) throw make_error("integer overflow");
        if (acc == 0 || acc == 1) break;
      }
      return Value::integer(acc);
    }
  }
  const double x = a.as_double();
  const double y = b.as_double();
  if (op == "+") return Value::number(x + y);
  if (op == "-") return Value::number(x - y);
  if (op == "*") return Value::number(x * y);
  if (op == "**") return Value::number(std::pow(x, y));
  if (y == 0) throw make_error("float division by zero");
  if (op == "//") return Value::number(std::floor(x / y));
  if (op == "%") {
    double m = std::fmod(x, y);
    if (m != 0 && ((m < 0) != (y < 0))) m += y;
    return Value::number(m);
  }
  unsupported(op, a, b);
}

}  // namespace

Value Interpreter::eval_binary(const Expr& e) {
  const std::string& op = e.name;
  if (op == "and") {
    Value a = eval(*e.kids[0]);
    return truthy(a) ? eval(*e.kids[1]) : a;
  }
  if (op == "or") {
    Value a = eval(*e.kids[0]);
    return truthy(a) ? a : eval(*e.kids[1]);
  }
  const Value a = eval(*e.kids[0]);
  const Value b = eval(*e.kids[1]);
  if (op == "~") return Value::string(to_str(a) + to_str(b));
  if (op == "==") return Value::boolean(equal(a, b));
  if (op == "!=") return Value::boolean(!equal(a, b));
  if (op == "<") return Value::boolean(less(a, b));
  if (op == ">") return Value::boolean(less(b, a));
  if (op == "<=") return Value::boolean(!less(b, a));
  if (op == ">=") return Value::boolean(!less(a, b));
  if (op == "in") return Value::boolean(contains(b, a));
  if (op == "not in") return Value::boolean(!contains(b, a));
  return binary_arith(op, a, b);
}

}  // namespace il::text::jinja
