// The IL_* environment switches (measurement and comparison knobs, documented where each is
// read): one way to read them, so "unset", "0" and other values mean the same everywhere.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace il::env {

// The variable's value, or nothing when it is unset.
std::optional<std::string> value(const char* name);
// Whether the variable is set to exactly `want`.
bool equals(const char* name, std::string_view want);
// A switch that is on unless the variable is "0".
bool on_unless_zero(const char* name);
// A switch that is off unless the variable is set to something other than "0".
bool on_when_set(const char* name);

}  // namespace il::env
