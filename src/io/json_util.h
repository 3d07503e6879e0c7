// Internal helpers for reading JSON files from model folders. Every accessor checks the JSON type
// itself so that no nlohmann exception escapes: a wrong type becomes an il::Error naming the file
// and the field.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace il::io::detail {

// Reads and parses a JSON file. Throws il::Error naming the file when it cannot be read or parsed.
nlohmann::json read_json_file(const std::filesystem::path& path);

// A short, always-printable rendering of a JSON value for error messages (invalid UTF-8 is
// replaced, long values are cut).
std::string describe(const nlohmann::json& v);

// The JSON type name as a user would read it ("string", "integer", "object", ...).
std::string_view type_name(const nlohmann::json& v);

// Field accessors. `obj` must be an object; `source` names the file in messages. The optional
// forms return nullopt when the key is absent or null; the required forms throw.
std::optional<long long> opt_int(const nlohmann::json& obj, std::string_view key, std::string_view source);
std::optional<double> opt_number(const nlohmann::json& obj, std::string_view key, std::string_view source);
std::optional<bool> opt_bool(const nlohmann::json& obj, std::string_view key, std::string_view source);
std::optional<std::string> opt_string(const nlohmann::json& obj, std::string_view key, std::string_view source);

long long req_int(const nlohmann::json& obj, std::string_view key, std::string_view source);
std::string req_string(const nlohmann::json& obj, std::string_view key, std::string_view source);

// An int field that must lie in [lo, hi]; absent → `fallback` when given, else an error.
int int_in_range(const nlohmann::json& obj, std::string_view key, std::string_view source, long long lo, long long hi,
                 std::optional<int> fallback = std::nullopt);

}  // namespace il::io::detail
