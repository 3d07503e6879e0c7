#include "core/float_format.h"

#include <charconv>
#include <cmath>

namespace il {

void append_float(std::string& out, float v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];  // the longest shortest-round-trip f32 ("-1.17549435e-38") is 15 characters
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_floats(std::string& out, const float* values, std::size_t n) {
  out += '[';
  for (std::size_t i = 0; i < n; ++i) {
    if (i) out += ',';
    append_float(out, values[i]);
  }
  out += ']';
}

}  // namespace il
