#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace il::server {

std::string error_body(const std::string& message, const std::string& type) {
  // The replace handler keeps a message quoting invalid UTF-8 from throwing while we report it.
  return nlohmann::json{{"error", message}, {"error_type", type}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace il::server
