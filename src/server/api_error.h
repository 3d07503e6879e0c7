// The one error shape of every route: an HTTP status plus {"error": "...", "error_type": "..."}.
#pragma once

#include <stdexcept>
#include <string>

namespace il::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, const std::string& message)
      : std::runtime_error(message), status_(status), type_(std::move(type)) {}
  int status() const { return status_; }
  const std::string& type() const { return type_; }

 private:
  int status_;
  std::string type_;
};

// 422: the request is well-formed HTTP but its content is wrong (JSON, types, sizes, UTF-8).
inline ApiError validation_error(const std::string& message) { return {422, "Validation", message}; }
// 424: the loaded model cannot serve this route (rerank on an embedding model, ...).
inline ApiError unsupported_error(const std::string& message) { return {424, "Backend", message}; }

std::string error_body(const std::string& message, const std::string& type);

}  // namespace il::server
