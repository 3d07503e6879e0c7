#include "io/json_util.h"

#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include "core/error.h"

namespace il::io::detail {

using nlohmann::json;

namespace {

// Returns the value under `key`, or nullptr when absent or null (HF writes null for "unset").
const json* find_field(const json& obj, std::string_view key, std::string_view source) {
  check(obj.is_object(), source, ": expected a JSON object, got ", type_name(obj));
  auto it = obj.find(std::string(key));
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

[[noreturn]] void wrong_type(std::string_view source, std::string_view key, std::string_view want, const json& got) {
  throw make_error(source, ": field \"", key, "\" must be ", want, ", got ", type_name(got), " ", describe(got));
}

}  // namespace

json read_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  check(std::filesystem::is_regular_file(path, ec), path.string(), ": not found or not a regular file");
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "cannot open ", path.string());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  check(!in.bad(), "cannot read ", path.string());
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw make_error(path.string(), ": invalid JSON: ", e.what());
  }
}

std::string describe(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  constexpr std::size_t kMax = 80;
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  return s;
}

std::string_view type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::binary:
      return "binary";
    case json::value_t::discarded:
      return "discarded";
  }
  return "?";
}

std::optional<long long> opt_int(const json& obj, std::string_view key, std::string_view source) {
  const json* v = find_field(obj, key, source);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned()) {
    const auto u = v->get<json::number_unsigned_t>();
    check(u <= static_cast<json::number_unsigned_t>(std::numeric_limits<long long>::max()), source, ": field \"", key,
          "\" is out of range: ", u);
    return static_cast<long long>(u);
  }
  if (v->is_number_integer()) return v->get<json::number_integer_t>();
  wrong_type(source, key, "an integer", *v);
}

std::optional<double> opt_number(const json& obj, std::string_view key, std::string_view source) {
  const json* v = find_field(obj, key, source);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) wrong_type(source, key, "a number", *v);
  return v->get<double>();
}

std::optional<bool> opt_bool(const json& obj, std::string_view key, std::string_view source) {
  const json* v = find_field(obj, key, source);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) wrong_type(source, key, "true or false", *v);
  return v->get<bool>();
}

std::optional<std::string> opt_string(const json& obj, std::string_view key, std::string_view source) {
  const json* v = find_field(obj, key, source);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) wrong_type(source, key, "a string", *v);
  return v->get<std::string>();
}

long long req_int(const json& obj, std::string_view key, std::string_view source) {
  auto v = opt_int(obj, key, source);
  check(v.has_value(), source, ": missing required field \"", key, "\"");
  return *v;
}

std::string req_string(const json& obj, std::string_view key, std::string_view source) {
  auto v = opt_string(obj, key, source);
  check(v.has_value(), source, ": missing required field \"", key, "\"");
  return *v;
}

int int_in_range(const json& obj, std::string_view key, std::string_view source, long long lo, long long hi,
                 std::optional<int> fallback) {
  auto v = opt_int(obj, key, source);
  if (!v) {
    check(fallback.has_value(), source, ": missing required field \"", key, "\"");
    return *fallback;
  }
  check(*v >= lo && *v <= hi, source, ": field \"", key, "\" = ", *v, " is outside [", lo, ", ", hi, "]");
  return static_cast<int>(*v);
}

}  // namespace il::io::detail
