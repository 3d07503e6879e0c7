#include "text/jinja/parser.h"

#include <initializer_list>

#include "core/error.h"

namespace il::text::jinja {
namespace {

using T = Token::Type;

// Deep nesting in a hostile template must not exhaust the stack.
constexpr int kMaxNesting = 200;

class Parser {
 public:
  Parser(const std::vector<Token>& toks, const std::string& name) : t_(toks), name_(name) {}

  Body parse_template() {
    Body body = parse_body({});
    return body;
  }

 private:
  const Token& cur() const { return t_[pos_]; }
  const Token& peek(std::size_t k = 1) const { return t_[std::min(pos_ + k, t_.size() - 1)]; }
  void advance() {
    if (pos_ + 1 < t_.size()) ++pos_;
  }
  bool is_op(const char* op) const { return cur().type == T::kOp && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == T::kName && cur().text == n; }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool accept_name(const char* n) {
    if (!is_name(n)) return false;
    advance();
    return true;
  }

  [[noreturn]] void fail(const Token& at, const std::string& what) const {
    throw make_error(name_, ":", at.line, ":", at.col, ": template syntax error: ", what);
  }

  static std::string describe(const Token& t) {
    switch (t.type) {
      case T::kText: return "text";
      case T::kVarBegin: return "'{{'";
      case T::kVarEnd: return "'}}'";
      case T::kBlockBegin: return "'{%'";
      case T::kBlockEnd: return "'%}'";
      case T::kEof: return "end of template";
      case T::kString: return "string";
      default: return "'" + t.text + "'";
    }
  }

  void expect_op(const char* op) {
    if (!accept_op(op)) fail(cur(), std::string("expected '") + op + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().type != T::kName) fail(cur(), "expected a name, got " + describe(cur()));
    std::string n = cur().text;
    advance();
    return n;
  }
  void expect_block_end() {
    if (cur().type != T::kBlockEnd) fail(cur(), "expected '%}', got " + describe(cur()));
    advance();
  }

  ExprPtr node(Expr::Kind k, const Token& at) {
    auto e = std::make_shared<Expr>();
    e->kind = k;
    e->line = at.line;
    e->col = at.col;
    return e;
  }

  struct Depth {
    explicit Depth(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxNesting) p_.fail(p_.cur(), "template nested too deeply");
    }
    ~Depth() { --p_.depth_; }
    Parser& p_;
  };

  // ---- statements ----

  // Parses statements until a block tag whose keyword is one of `ends` (left unconsumed, with the
  // stream at that keyword) or the end of the template (an error when ends is not empty).
  Body parse_body(std::initializer_list<const char*> ends) {
    Depth guard(*this);
    Body body;
    while (true) {
      const Token& tok = cur();
      if (tok.type == T::kEof) {
        if (ends.size() == 0) return body;
        std::string want;
        for (const char* e : ends) want += std::string(want.empty() ? "" : " or ") + "'" + e + "'";
        fail(tok, "unexpected end of template, expected " + want);
      }
      if (tok.type == T::kText) {
        auto s = std::make_shared<Stmt>();
        s->kind = Stmt::Kind::kText;
        s->text = tok.text;
        body.push_back(s);
        advance();
      } else if (tok.type == T::kVarBegin) {
        advance();
        auto s = std::make_shared<Stmt>();
        s->kind = Stmt::Kind::kOutput;
        s->line = tok.line;
        s->col = tok.col;
        s->expr = parse_tuple(true);
        if (cur().type != T::kVarEnd) fail(cur(), "expected '}}', got " + describe(cur()));
        advance();
        body.push_back(s);
      } else if (tok.type == T::kBlockBegin) {
        const Token& kw = peek();
        if (kw.type != T::kName) fail(kw, "expected a tag name, got " + describe(kw));
        for (const char* e : ends) {
          if (kw.text == e) {
            advance();
            return body;
          }
        }
        advance();
        parse_statement(body);
      } else {
        fail(tok, "unexpected " + describe(tok));
      }
    }
  }

  void parse_statement(Body& body) {
    const Token kw = cur();
    const std::string& k = kw.text;
    auto s = std::make_shared<Stmt>();
    s->line = kw.line;
    s->col = kw.col;
    advance();
    if (k == "if") {
      s->kind = Stmt::Kind::kIf;
      s->conds.push_back(parse_tuple(false));
      expect_block_end();
      while (true) {
        s->bodies.push_back(parse_body({"elif", "else", "endif"}));
        const std::string which = cur().text;
        advance();
        if (which == "elif") {
          s->conds.push_back(parse_tuple(false));
          expect_block_end();
        } else if (which == "else") {
          expect_block_end();
          s->bodies.push_back(parse_body({"endif"}));
          advance();
          expect_block_end();
          break;
        } else {
          expect_block_end();
          break;
        }
      }
    } else if (k == "for") {
      s->kind = Stmt::Kind::kFor;
      s->targets.push_back(expect_name());
      while (accept_op(",")) {
        if (is_name("in")) break;
        s->targets.push_back(expect_name());
      }
      if (!accept_name("in")) fail(cur(), "expected 'in' in for loop, got " + describe(cur()));
      s->expr = parse_tuple(false);
      if (accept_name("if")) s->filter = parse_expression(true);
      if (is_name("recursive")) fail(cur(), "recursive for loops are not supported");
      expect_block_end();
      ++loop_depth_;
      s->bodies.push_back(parse_body({"else", "endfor"}));
      --loop_depth_;
      const std::string which = cur().text;
      advance();
      expect_block_end();
      if (which == "else") {
        s->bodies.push_back(parse_body({"endfor"}));
        advance();
        expect_block_end();
      }
    } else if (k == "set") {
      s->targets.push_back(expect_name());
      if (accept_op(".")) {
        s->attr = expect_name();
      } else {
        while (accept_op(",")) s->targets.push_back(expect_name());
      }
      if (accept_op("=")) {
        s->kind = Stmt::Kind::kSet;
        s->expr = parse_tuple(true);
        expect_block_end();
      } else {
        if (!s->attr.empty() || s->targets.size() != 1) fail(cur(), "expected '=' in set");
        s->kind = Stmt::Kind::kSetBlock;
        expect_block_end();
        s->bodies.push_back(parse_body({"endset"}));
        advance();
        expect_block_end();
      }
    } else if (k == "macro") {
      s->kind = Stmt::Kind::kMacro;
      s->text = expect_name();
      expect_op("(");
      while (!accept_op(")")) {
        if (!s->params.empty()) expect_op(",");
        if (accept_op(")")) break;
        std::string p = expect_name();
        ExprPtr dflt;
        if (accept_op("=")) dflt = parse_expression(true);
        s->params.emplace_back(std::move(p), dflt);
      }
      expect_block_end();
      const int loops_outside = loop_depth_;
      loop_depth_ = 0;  // a macro's body is not inside the loop that defines it
      s->bodies.push_back(parse_body({"endmacro"}));
      loop_depth_ = loops_outside;
      advance();
      if (cur().type == T::kName) advance();  // {% endmacro name %}
      expect_block_end();
    } else if (k == "break" || k == "continue") {
      if (loop_depth_ == 0) fail(kw, "'" + k + "' outside a for loop");
      s->kind = k == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
      expect_block_end();
    } else if (k == "generation") {
      // transformers' {% generation %} marks assistant text for its token mask; the text renders
      // unchanged.
      expect_block_end();
      Body inner = parse_body({"endgeneration"});
      advance();
      expect_block_end();
      body.insert(body.end(), inner.begin(), inner.end());
      return;
    } else {
      fail(kw, "unknown or unsupported tag '" + k + "'");
    }
    body.push_back(s);
  }

  // ---- expressions ----

  // A comma-separated sequence becomes a tuple ("a, b"); a single expression stays itself.
  ExprPtr parse_tuple(bool with_cond) {
    const Token& at = cur();
    ExprPtr first = parse_expression(with_cond);
    if (!is_op(",")) return first;
    auto tup = node(Expr::Kind::kTuple, at);
    tup->kids.push_back(first);
    while (accept_op(",")) {
      if (cur().type == T::kVarEnd || cur().type == T::kBlockEnd || is_op(")")) break;
      tup->kids.push_back(parse_expression(with_cond));
    }
    return tup;
  }

  ExprPtr parse_expression(bool with_cond) {
    Depth guard(*this);
    ExprPtr e = parse_or();
    if (!with_cond) return e;
    while (is_name("if")) {
      const Token& at = cur();
      advance();
      auto c = node(Expr::Kind::kCond, at);
      c->kids.push_back(parse_or());
      c->kids.push_back(e);
      c->kids.push_back(accept_name("else") ? parse_expression(true) : nullptr);
      e = c;
    }
    return e;
  }

  ExprPtr binary(const Token& at, std::string op, ExprPtr a, ExprPtr b) {
    auto n = node(Expr::Kind::kBinary, at);
    n->name = std::move(op);
    n->kids = {std::move(a), std::move(b)};
    return n;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const Token at = cur();
      advance();
      e = binary(at, "or", e, parse_and());
    }
    return e;
  }
  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const Token at = cur();
      advance();
      e = binary(at, "and", e, parse_not());
    }
    return e;
  }
  ExprPtr parse_not() {
    if (is_name("not")) {
      Depth guard(*this);
      const Token at = cur();
      advance();
      auto n = node(Expr::Kind::kUnary, at);
      n->name = "not";
      n->kids.push_back(parse_not());
      return n;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    ExprPtr e = parse_math1();
    while (true) {
      const Token at = cur();
      std::string op;
      if (at.type == T::kOp && (at.text == "==" || at.text == "!=" || at.text == "<" ||
                                at.text == "<=" || at.text == ">" || at.text == ">=")) {
        op = at.text;
        advance();
      } else if (is_name("in")) {
        op = "in";
        advance();
      } else if (is_name("not") && peek().type == T::kName && peek().text == "in") {
        op = "not in";
        advance();
        advance();
      } else {
        return e;
      }
      e = binary(at, op, e, parse_math1());
    }
  }
  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token at = cur();
      advance();
      e = binary(at, at.text, e, parse_concat());
    }
    return e;
  }
  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      const Token at = cur();
      advance();
      e = binary(at, "~", e, parse_math2());
    }
    return e;
  }
  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token at = cur();
      advance();
      e = binary(at, at.text, e, parse_pow());
    }
    return e;
  }
  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const Token at = cur();
      advance();
      e = binary(at, "**", e, parse_unary(true));
    }
    return e;
  }
  ExprPtr parse_unary(bool with_filter) {
    Depth guard(*this);
    const Token at = cur();
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      advance();
      e = node(Expr::Kind::kUnary, at);
      e->name = at.text;
      e->kids.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(e);
    if (with_filter) e = parse_filters(e);
    return e;
  }

  ExprPtr parse_primary() {
    const Token at = cur();
    if (at.type == T::kName) {
      advance();
      const std::string& n = at.text;
      auto lit = node(Expr::Kind::kLiteral, at);
      if (n == "true" || n == "True") {
        lit->literal = Value::boolean(true);
      } else if (n == "false" || n == "False") {
        lit->literal = Value::boolean(false);
      } else if (n == "none" || n == "None") {
        lit->literal = Value::none();
      } else {
        auto name = node(Expr::Kind::kName, at);
        name->name = n;
        return name;
      }
      return lit;
    }
    if (at.type == T::kString) {
      std::string s;
      while (cur().type == T::kString) {  // adjacent literals concatenate
        s += cur().text;
        advance();
      }
      auto lit = node(Expr::Kind::kLiteral, at);
      lit->literal = Value::string(std::move(s));
      return lit;
    }
    if (at.type == T::kInt || at.type == T::kFloat) {
      advance();
      auto lit = node(Expr::Kind::kLiteral, at);
      lit->literal = at.type == T::kInt ? Value::integer(at.i) : Value::number(at.f);
      return lit;
    }
    if (accept_op("(")) {
      if (accept_op(")")) {
        auto tup = node(Expr::Kind::kTuple, at);
        return tup;
      }
      ExprPtr first = parse_expression(true);
      if (accept_op(")")) return first;
      auto tup = node(Expr::Kind::kTuple, at);
      tup->kids.push_back(first);
      while (accept_op(",")) {
        if (is_op(")")) break;
        tup->kids.push_back(parse_expression(true));
      }
      expect_op(")");
      return tup;
    }
    if (accept_op("[")) {
      auto list = node(Expr::Kind::kList, at);
      while (!accept_op("]")) {
        if (!list->kids.empty()) expect_op(",");
        if (accept_op("]")) break;
        list->kids.push_back(parse_expression(true));
      }
      return list;
    }
    if (accept_op("{")) {
      auto dict = node(Expr::Kind::kDict, at);
      while (!accept_op("}")) {
        if (!dict->kids.empty()) expect_op(",");
        if (accept_op("}")) break;
        dict->kids.push_back(parse_expression(true));
        expect_op(":");
        dict->kids.push_back(parse_expression(true));
      }
      return dict;
    }
    fail(at, "unexpected " + describe(at));
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      const Token at = cur();
      if (accept_op(".")) {
        auto a = node(Expr::Kind::kAttr, at);
        if (cur().type == T::kInt) {  // x.0 is x[0] in jinja2
          a->kind = Expr::Kind::kIndex;
          auto idx = node(Expr::Kind::kLiteral, cur());
          idx->literal = Value::integer(cur().i);
          advance();
          a->kids = {e, idx};
        } else {
          a->name = expect_name();
          a->kids.push_back(e);
        }
        e = a;
      } else if (accept_op("[")) {
        e = parse_subscript(e, at);
      } else if (is_op("(")) {
        e = parse_call(e);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj, const Token& at) {
    Depth guard(*this);
    ExprPtr parts[3];
    int colons = 0;
    auto part_end = [&] { return is_op(":") || is_op("]"); };
    if (!part_end()) parts[0] = parse_expression(true);
    while (colons < 2 && accept_op(":")) {
      ++colons;
      if (!part_end()) parts[colons] = parse_expression(true);
    }
    expect_op("]");
    if (colons == 0) {
      if (!parts[0]) fail(at, "empty subscript");
      auto n = node(Expr::Kind::kIndex, at);
      n->kids = {obj, parts[0]};
      return n;
    }
    auto n = node(Expr::Kind::kSlice, at);
    n->kids = {obj, parts[0], parts[1], parts[2]};
    return n;
  }

  // Appends "(args, key=value)" to n (kids after those already there, kwargs).
  void parse_call_args(Expr& n) {
    expect_op("(");
    bool first = true;
    while (!accept_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (accept_op(")")) break;
      if (cur().type == T::kName && peek().type == T::kOp && peek().text == "=") {
        std::string key = cur().text;
        advance();
        advance();
        n.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!n.kwargs.empty()) fail(cur(), "positional argument after keyword argument");
        n.kids.push_back(parse_expression(true));
      }
    }
  }

  ExprPtr parse_call(ExprPtr callee) {
    Depth guard(*this);
    auto n = node(Expr::Kind::kCall, cur());
    n->kids.push_back(callee);
    parse_call_args(*n);
    return n;
  }

  ExprPtr parse_filters(ExprPtr e) {
    while (true) {
      const Token at = cur();
      if (accept_op("|")) {
        auto f = node(Expr::Kind::kFilter, at);
        f->name = expect_name();
        f->kids.push_back(e);
        if (is_op("(")) parse_call_args(*f);
        e = f;
      } else if (accept_name("is")) {
        auto t = node(Expr::Kind::kTest, at);
        t->negated = accept_name("not");
        t->name = expect_name();
        t->kids.push_back(e);
        if (is_op("(")) {
          parse_call_args(*t);
        } else if (cur().type == T::kString || cur().type == T::kInt || cur().type == T::kFloat ||
                   is_op("[") || is_op("{") ||
                   (cur().type == T::kName && cur().text != "else" && cur().text != "or" &&
                    cur().text != "and")) {
          // A single argument without parentheses: `x is divisibleby 3`, `x is sameas none`.
          ExprPtr arg = parse_primary();
          t->kids.push_back(parse_postfix(arg));
        }
        e = t;
      } else if (is_op("(")) {
        e = parse_call(e);
      } else {
        return e;
      }
    }
  }

  const std::vector<Token>& t_;
  const std::string& name_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;  // for loops around the statement being parsed
};

}  // namespace

Body parse(const std::vector<Token>& tokens, const std::string& source_name) {
  return Parser(tokens, source_name).parse_template();
}

}  // namespace il::text::jinja
