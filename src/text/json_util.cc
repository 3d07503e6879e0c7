#include "text/json_util.h"

namespace il::text {
namespace {

std::string describe(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::string: return "a string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return "a number";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::binary:
    case Json::value_t::discarded: break;
  }
  return "an unexpected value";
}

}  // namespace

void JsonRef::fail(std::string_view what) const {
  throw make_error(*source_, ": ", path_.empty() ? std::string("(top level)") : path_, " ", what);
}

std::string JsonRef::child_path(std::string_view name) const {
  return path_.empty() ? std::string(name) : path_ + "." + std::string(name);
}

void JsonRef::expect_object() const {
  if (!value_->is_object()) fail("must be an object, not " + describe(*value_));
}

void JsonRef::expect_array() const {
  if (!value_->is_array()) fail("must be an array, not " + describe(*value_));
}

JsonRef JsonRef::operator[](std::string_view name) const {
  expect_object();
  const auto it = value_->find(name);
  if (it == value_->end()) {
    JsonRef(*source_, *value_, child_path(name)).fail("is missing");
  }
  return JsonRef(*source_, *it, child_path(name));
}

std::optional<JsonRef> JsonRef::find(std::string_view name) const {
  expect_object();
  const auto it = value_->find(name);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return JsonRef(*source_, *it, child_path(name));
}

JsonRef JsonRef::at(std::size_t index) const {
  expect_array();
  return JsonRef(*source_, (*value_)[index], path_ + "[" + std::to_string(index) + "]");
}

std::size_t JsonRef::size() const {
  expect_array();
  return value_->size();
}

bool JsonRef::as_bool() const {
  if (!value_->is_boolean()) fail("must be a boolean, not " + describe(*value_));
  return value_->get<bool>();
}

std::string JsonRef::as_string() const {
  if (!value_->is_string()) fail("must be a string, not " + describe(*value_));
  return value_->get<std::string>();
}

int64_t JsonRef::as_int(int64_t min, int64_t max) const {
  if (!value_->is_number_integer()) fail("must be an integer, not " + describe(*value_));
  if (value_->is_number_unsigned()) {
    const auto u = value_->get<uint64_t>();
    if (u > static_cast<uint64_t>(max)) {
      fail("is " + std::to_string(u) + ", above the maximum " + std::to_string(max));
    }
    return static_cast<int64_t>(u);
  }
  const auto v = value_->get<int64_t>();
  if (v < min || v > max) {
    fail("is " + std::to_string(v) + ", outside [" + std::to_string(min) + ", " +
         std::to_string(max) + "]");
  }
  return v;
}

bool JsonRef::get_bool(std::string_view name, bool fallback) const {
  const auto v = find(name);
  return v ? v->as_bool() : fallback;
}

std::string JsonRef::get_string(std::string_view name, std::string_view fallback) const {
  const auto v = find(name);
  return v ? v->as_string() : std::string(fallback);
}

int64_t JsonRef::get_int(std::string_view name, int64_t fallback, int64_t min,
                         int64_t max) const {
  const auto v = find(name);
  return v ? v->as_int(min, max) : fallback;
}

std::string JsonRef::type(std::initializer_list<std::string_view> supported) const {
  const std::string t = (*this)["type"].as_string();
  for (std::string_view s : supported) {
    if (t == s) return t;
  }
  std::string list;
  for (std::string_view s : supported) {
    if (!list.empty()) list += ", ";
    list += s;
  }
  (*this)["type"].fail("\"" + t + "\" is not supported (supported: " + list + ")");
}

}  // namespace il::text
