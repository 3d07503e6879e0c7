#include "io/json_util.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "io/regular_file.h"

namespace il::io {

using nlohmann::json;

namespace {

constexpr std::size_t kDescribeChars = 80;

// nlohmann's messages read "[json.exception.parse_error.101] parse error at line 1, column 6:
// syntax error ..." or "[json.exception.out_of_range.406] number overflow parsing '1e400'"; the
// library's code and its own position are dropped for ours.
std::string library_reason(const json::exception& e) {
  std::string_view what = e.what();
  if (const auto bracket = what.find("] "); what.rfind("[json.exception.", 0) == 0 && bracket != std::string_view::npos)
    what.remove_prefix(bracket + 2);
  if (what.rfind("parse error at line ", 0) == 0) {
    const auto colon = what.find(": ", what.find("column "));
    if (colon != std::string_view::npos) what.remove_prefix(colon + 2);
  }
  return std::string(what);
}

// Where the parser stopped: a line and column in text of several lines (a file someone edits),
// a byte offset in one line (an input line, whose own number `what` already gives).
std::string parse_position(std::string_view text, std::size_t byte) {
  const std::size_t read = std::min(byte, text.size());
  const std::size_t newlines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  if (newlines == 0 || (newlines == 1 && text.back() == '\n')) return "at byte " + std::to_string(byte);
  const std::string_view before = text.substr(0, read == 0 ? 0 : read - 1);
  const std::size_t line_start = before.rfind('\n') == std::string_view::npos ? 0 : before.rfind('\n') + 1;
  const auto line = 1 + std::count(before.begin(), before.end(), '\n');
  return "at line " + std::to_string(line) + ", column " + std::to_string(read - line_start);
}

// Appends a rendering of `v` to `out`, stopping once `out` holds `limit` characters: containers
// stop at the element that crosses it, strings are cut before escaping, and nesting past a few
// levels is elided, so the work is bounded whatever `v` holds.
void append_bounded(std::string& out, const json& v, std::size_t limit, int depth) {
  constexpr int kDescribeDepth = 16;
  if (out.size() >= limit) return;
  switch (v.type()) {
    case json::value_t::object:
    case json::value_t::array: {
      const bool object = v.is_object();
      out += object ? '{' : '[';
      if (depth >= kDescribeDepth && !v.empty()) {
        out += "...";
      } else {
        bool first = true;
        for (auto it = v.begin(); it != v.end() && out.size() < limit; ++it) {
          if (!first) out += ',';
          first = false;
          if (object) {
            append_bounded(out, json(it.key().substr(0, limit)), limit, depth + 1);
            out += ':';
          }
          append_bounded(out, *it, limit, depth + 1);
        }
      }
      out += object ? '}' : ']';
      return;
    }
    case json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      const json cut = s.size() > limit ? json(s.substr(0, limit)) : json();
      out += (cut.is_null() ? v : cut).dump(-1, ' ', false, json::error_handler_t::replace);
      return;
    }
    case json::value_t::null:
    case json::value_t::boolean:
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
    case json::value_t::binary:
    case json::value_t::discarded:
      out += v.dump(-1, ' ', false, json::error_handler_t::replace);
      return;
  }
}

}  // namespace

json parse_json_limited(std::string_view text, const std::string& what) {
  // The parser itself keeps its nesting on the heap; the bound is for what walks the value after.
  // The callback costs about 10 % of a parse (10 MB of tokenizer-like JSON: 263 -> 294 ms).
  const json::parser_callback_t limit_depth = [&what](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw make_error(what, ": JSON nested deeper than ", kMaxJsonDepth, " levels (the limit)");
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), limit_depth);
  } catch (const json::parse_error& e) {
    throw make_error(what, ": not valid JSON ", parse_position(text, e.byte), ": ", library_reason(e));
  } catch (const json::exception& e) {  // a number out of range (1e400) while parsing
    throw make_error(what, ": not valid JSON: ", library_reason(e));
  }
}

json read_json_file(const std::filesystem::path& path) {
  return parse_json_limited(read_regular_file(path), path.string());
}

std::string describe_json(const json& v) {
  std::string s;
  append_bounded(s, v, kDescribeChars, 0);
  if (s.size() > kDescribeChars) s = s.substr(0, kDescribeChars) + "...";
  return s;
}

}  // namespace il::io

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

float opt_positive_float(const json& obj, std::string_view key, std::string_view source, float fallback) {
  const std::optional<double> v = opt_number(obj, key, source);
  if (!v) return fallback;
  const bool in_range = *v > 0 && *v <= std::numeric_limits<float>::max();
  const float f = in_range ? static_cast<float>(*v) : 0.0f;
  check(f > 0, source, ": field \"", key, "\" = ", *v, " must be a positive number");
  return f;
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

const json& req_object(const json& obj, std::string_view key, std::string_view source) {
  const auto it = obj.find(key);
  check(it != obj.end() && it->is_object(), source, ": field \"", key, "\" must be an object",
        it == obj.end() ? std::string(" (it is missing)") : ", got " + describe_json(*it));
  return *it;
}

int token_id_field(const json& obj, std::string_view key, std::string_view source, int fallback, int vocab) {
  const int id = int_in_range(obj, key, source, 0, std::numeric_limits<int>::max(), fallback);
  check(id < vocab, source, ": field \"", key, "\" = ", id, " is outside the vocabulary of ", vocab);
  return id;
}

}  // namespace il::io::detail
