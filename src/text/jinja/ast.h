// The parsed form of a template: expressions and statements as small tree nodes.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.h"

namespace il::text::jinja {

struct Expr;
using ExprPtr = std::shared_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,   // literal
    kName,      // name
    kList,      // kids
    kTuple,     // kids
    kDict,      // kwargs-like pairs in kids: key, value, key, value...
    kAttr,      // kids[0].name
    kIndex,     // kids[0][kids[1]]
    kSlice,     // kids[0][kids[1]:kids[2]:kids[3]] (null kids for absent parts)
    kCall,      // kids[0](kids[1..], kwargs)
    kFilter,    // kids[0] | name(kids[1..], kwargs)
    kTest,      // kids[0] is [not] name(kids[1..])
    kUnary,     // op kids[0] ("-", "+", "not")
    kBinary,    // kids[0] op kids[1] (arithmetic, "~", "and", "or", comparisons, "in", "not in")
    kCond,      // kids[1] if kids[0] else kids[2] (kids[2] may be null)
  };
  Kind kind;
  int line = 0;
  int col = 0;
  Value literal;
  std::string name;  // name / attribute / filter / test / operator
  bool negated = false;
  std::vector<ExprPtr> kids;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using StmtPtr = std::shared_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // conds[i] -> bodies[i]; bodies.back() is the else body when one more than conds
    kFor,       // for targets in expr [if filter]: bodies[0] [else bodies[1]]
    kSet,       // set targets = expr; or set ns.attr = expr (attr non-empty)
    kSetBlock,  // set targets[0] %} bodies[0] {% endset
    kMacro,     // macro name(params) bodies[0]
    kBreak,
    kContinue,
  };
  Kind kind;
  int line = 0;
  int col = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;  // for loop filter
  std::vector<ExprPtr> conds;
  std::vector<Body> bodies;
  std::vector<std::string> targets;
  std::string attr;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro parameters and defaults
};

}  // namespace il::text::jinja
