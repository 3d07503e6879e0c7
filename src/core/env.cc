#include "core/env.h"

#include <cstdlib>

namespace il::env {

std::optional<std::string> value(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

bool equals(const char* name, std::string_view want) {
  const auto v = value(name);
  return v && *v == want;
}

bool on_unless_zero(const char* name) { return !equals(name, "0"); }

bool on_when_set(const char* name) {
  const auto v = value(name);
  return v && *v != "0";
}

}  // namespace il::env
