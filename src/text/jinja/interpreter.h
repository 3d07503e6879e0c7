// Runs a parsed template (ast.h) over values (value.h). Hostile templates are refused with
// il::Error, never a crash or a hang: output size, macro recursion and the total number of
// statements and loop iterations executed are bounded (Limits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "text/jinja/ast.h"
#include "text/jinja/value.h"

namespace il::text::jinja {

struct Limits {
  std::size_t max_output_bytes = std::size_t{64} << 20;
  int max_call_depth = 100;        // macro calls in progress
  int max_depth = 1000;            // statements and expressions being evaluated, nested (stack)
  int64_t max_steps = 2'000'000;  // statements + loop iterations + filter items (~1 s)
};

// An error that already names its place in the template.
class LocatedError : public il::Error {
 public:
  using il::Error::Error;
};

class Interpreter {
 public:
  Interpreter(std::string source_name, Limits limits);

  // Renders body with the given variables (a dict) visible to it.
  std::string render(const Body& body, const Value& vars);

  Value eval(const Expr& e);
  // Counts one unit of work; throws when the template has done too much.
  void step(int64_t n = 1);
  const Limits& limits() const { return limits_; }
  // Calls a callable value (macro or builtin).
  Value call(const Value& fn, Args& args);
  // Namespaces may come to hold themselves (ns.x = ns); render() empties every one it created at
  // the end, so that no reference cycle outlives it.
  void track_namespace(std::shared_ptr<Dict> ns) { namespaces_.push_back(std::move(ns)); }

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  Flow exec_body(const Body& body, std::string& out);
  Flow exec(const Stmt& s, std::string& out);
  void exec_for(const Stmt& s, std::string& out);
  void exec_set(const Stmt& s);
  Value make_macro(const Stmt& s);
  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v);
  void append(std::string& out, const std::string& text);
  Value eval_binary(const Expr& e);
  [[noreturn]] void fail_at(int line, int col, const std::string& what) const;

  std::string source_name_;
  Limits limits_;
  // Variable scopes, innermost last; a macro call runs on [root, its own].
  std::vector<std::shared_ptr<Dict>> scopes_;
  int64_t steps_ = 0;
  int call_depth_ = 0;
  int depth_ = 0;
  std::vector<std::shared_ptr<Dict>> namespaces_;
  struct DepthGuard {
    explicit DepthGuard(Interpreter& in);
    ~DepthGuard() { --in_.depth_; }
    Interpreter& in_;
  };
};

// Builtins (methods.cc, filters.cc, globals.cc, strings.cc).
bool has_filter(const std::string& name);
bool has_test(const std::string& name);
Value apply_filter(Interpreter& in, const std::string& name, const Value& v, Args& args);
bool apply_test(Interpreter& in, const std::string& name, const Value& v, Args& args);
// obj.name (attribute first, then item) and obj[key] (item first, then attribute), as jinja2's
// sandbox resolves them.
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
// The globals every chat template sees: range, namespace, dict, raise_exception, strftime_now.
void add_globals(Dict& globals);
// Elements of an iterable (list, tuple, dict keys, string characters); undefined is empty.
List iterate(const Value& v);
// The number of code points of a UTF-8 string.
std::size_t utf8_length(const std::string& s);  // strings.cc

}  // namespace il::text::jinja
