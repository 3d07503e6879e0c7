#include "server/json_out.h"

#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace il::server {

void append_float(std::string& out, float v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_floats(std::string& out, const float* v, std::size_t n) {
  out += '[';
  for (std::size_t i = 0; i < n; ++i) {
    if (i) out += ',';
    append_float(out, v[i]);
  }
  out += ']';
}

std::string error_body(const std::string& message, const std::string& type) {
  // The replace handler keeps a message quoting invalid UTF-8 from throwing while we report it.
  return nlohmann::json{{"error", message}, {"error_type", type}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace il::server
