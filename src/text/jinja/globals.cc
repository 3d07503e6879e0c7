// The globals of a chat template: range (capped as jinja2's sandbox caps it), namespace, dict, and
// transformers' raise_exception and strftime_now.
#include <cmath>
#include <ctime>

#include "text/jinja/builtins_util.h"

namespace il::text::jinja {
namespace {

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