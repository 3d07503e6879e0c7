// The request and response the routes see: plain values, independent of the
// HTTP library, so that route code and its tests (and the fuzz target) need no
// socket.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace il::server {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// Case-insensitive ASCII comparison (header names, tokens).
bool iequals(std::string_view a, std::string_view b);

struct HttpRequest {
  std::string method; // as sent: "GET", "POST", ...
  std::string target; // as sent: "/embed?x=1"
  std::string path;   // the target up to '?'
  HeaderList headers; // in order, names as sent
  std::string body;   // decoded (Content-Encoding undone)
  bool keep_alive = true;

  // The first header of that name (case-insensitive), or "" when absent.
  std::string header(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type; // empty: no body type (and no body expected)
  std::string body;
  HeaderList headers; // extra headers (Retry-After, timing headers, ...)
  bool close = false; // end the connection after this answer

  void set_header(std::string name, std::string value);
  std::string header(std::string_view name) const;
  void json(std::string text) {
    content_type = "application/json";
    body = std::move(text);
  }
};

} // namespace il::server
