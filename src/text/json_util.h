// Reading tokenizer.json with errors that name the file and the field path, e.g.
//   tokenizer.json: model.type "Foo" is not supported (supported: WordPiece)
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace il::text {

using Json = nlohmann::json;

// A JSON value together with where it sits in the file.
class JsonRef {
 public:
  JsonRef(const std::string& source, const Json& value, std::string path)
      : source_(&source), value_(&value), path_(std::move(path)) {}

  const Json& value() const { return *value_; }
  const std::string& path() const { return path_; }
  const std::string& source() const { return *source_; }
  bool is_null() const { return value_->is_null(); }

  // A required member; its absence is an error.
  JsonRef operator[](std::string_view name) const;
  // A member that may be absent or null.
  std::optional<JsonRef> find(std::string_view name) const;
  JsonRef at(std::size_t index) const;
  std::size_t size() const;  // of an array (error otherwise)

  bool as_bool() const;
  std::string as_string() const;
  int64_t as_int(int64_t min, int64_t max) const;
  void expect_object() const;
  void expect_array() const;

  // Optional members with defaults (absent or null gives the default).
  bool get_bool(std::string_view name, bool fallback) const;
  std::string get_string(std::string_view name, std::string_view fallback) const;
  int64_t get_int(std::string_view name, int64_t fallback, int64_t min, int64_t max) const;

  // The component's "type" string, which must be one of `supported`.
  std::string type(std::initializer_list<std::string_view> supported) const;

  // Throws il::Error: "<source>: <path> <what>".
  [[noreturn]] void fail(std::string_view what) const;

 private:
  std::string child_path(std::string_view name) const;
  const std::string* source_;
  const Json* value_;
  std::string path_;
};

}  // namespace il::text
