// Helpers for reading JSON from model folders and inputs. Every accessor checks the JSON type
// itself so that no nlohmann exception escapes: a wrong type becomes an il::Error naming the file
// and the field.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace il::io {

// The deepest nesting of objects and arrays accepted in any JSON we parse. Real files nest a few
// levels (tokenizer.json about 6); the bound keeps every recursive walk of a parsed value, such as
// dump() building an error message, far from the stack's end.
inline constexpr int kMaxJsonDepth = 128;

// Parses JSON text that came from `what` (a file name, "input line 3"): the one JSON entry point
// for file contents and input lines. Throws il::Error "<what>: not valid JSON ..." with the
// position, or "<what>: JSON nested deeper than 128 levels".
nlohmann::json parse_json_limited(std::string_view text, const std::string& what);

// A short, always-printable rendering of a JSON value for error messages: invalid UTF-8 is
// replaced and only the first 80 characters are produced, so its cost does not grow with the
// value (a huge or deep value from a hostile file costs no more than a small one).
std::string describe_json(const nlohmann::json& v);

// Reads and parses a JSON file (a regular file only, see io/regular_file.h). Throws il::Error
// naming the file when it cannot be read or parsed.
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace il::io

namespace il::io::detail {

using io::read_json_file;
inline std::string describe(const nlohmann::json& v) { return describe_json(v); }

// The JSON type name as a user would read it ("string", "integer", "object", ...).
std::string_view type_name(const nlohmann::json& v);

// Field accessors. `obj` must be an object; `source` names the file in messages. The optional
// forms return nullopt when the key is absent or null; the required forms throw.
std::optional<long long> opt_int(const nlohmann::json& obj, std::string_view key, std::string_view source);
std::optional<double> opt_number(const nlohmann::json& obj, std::string_view key, std::string_view source);
std::optional<bool> opt_bool(const nlohmann::json& obj, std::string_view key, std::string_view source);
std::optional<std::string> opt_string(const nlohmann::json& obj, std::string_view key, std::string_view source);
// A positive number that stays positive as a float (epsilons, rope thetas); `fallback` when
// absent or null. Zero, negatives, and values that overflow or underflow a float are refused.
float opt_positive_float(const nlohmann::json& obj, std::string_view key, std::string_view source, float fallback);

long long req_int(const nlohmann::json& obj, std::string_view key, std::string_view source);
std::string req_string(const nlohmann::json& obj, std::string_view key, std::string_view source);

// An int field that must lie in [lo, hi]; absent → `fallback` when given, else an error.
int int_in_range(const nlohmann::json& obj, std::string_view key, std::string_view source, long long lo, long long hi,
                 std::optional<int> fallback = std::nullopt);

// A field that must be a JSON object (a nested config: "text_config", "vision_config").
const nlohmann::json& req_object(const nlohmann::json& obj, std::string_view key, std::string_view source);

// A token id field in 0 .. vocab − 1; absent → `fallback` (which must also be in range).
int token_id_field(const nlohmann::json& obj, std::string_view key, std::string_view source, int fallback, int vocab);

}  // namespace il::io::detail
