#include "server/route_table.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace il::server {
namespace {

std::string media_type(const std::string &content_type) {
  std::string t = content_type.substr(0, content_type.find(';'));
  t.erase(0, t.find_first_not_of(" \t"));
  t.erase(t.find_last_not_of(" \t") + 1);
  std::transform(t.begin(), t.end(), t.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return t;
}

// As axum's Json extractor (TEI): application/json, or a +json type.
bool is_json(const std::string &content_type) {
  const std::string t = media_type(content_type);
  return t == "application/json" ||
         (t.starts_with("application/") && t.ends_with("+json"));
}

// Compares in a time that does not depend on where the strings differ (an API
// key is a secret).
bool same_secret(const std::string &a, const std::string &b) {
  if (a.size() != b.size())
    return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool takes(const Route &r, const std::string &method) {
  return (r.method == Method::kGet && method == "GET") ||
         (r.method == Method::kPost && method == "POST");
}

} // namespace

HttpResponse error_response(int status, const std::string &type,
                            const std::string &message) {
  HttpResponse res;
  res.status = status;
  res.json(error_body(message, type));
  return res;
}

void RouteTable::add(Method method, const std::string &path, bool compute,
                     Handler handler, BodyKind body) {
  routes_[path].push_back(Route{method, compute, std::move(handler), body});
}

const Route *RouteTable::find(const HttpRequest &head) const {
  const auto it = routes_.find(head.path);
  if (it == routes_.end())
    return nullptr;
  for (const Route &r : it->second)
    if (takes(r, head.method))
      return &r;
  return nullptr;
}

std::optional<HttpResponse>
RouteTable::screen(const HttpRequest &head, const std::string &api_key) const {
  const auto it = routes_.find(head.path);
  if (it == routes_.end())
    return error_response(404, "NotFound",
                          "no such route: " + head.path.substr(0, 200));
  const Route *route = find(head);
  if (route == nullptr) {
    std::string allow;
    for (const Route &r : it->second)
      allow += std::string(allow.empty() ? "" : ", ") +
               (r.method == Method::kGet ? "GET" : "POST");
    HttpResponse res = error_response(405, "MethodNotAllowed",
                                      head.path + " takes " + allow);
    res.set_header("Allow", allow);
    return res;
  }
  const std::string type = head.header("Content-Type");
  const bool form = route->body == BodyKind::kJsonOrForm &&
                    media_type(type) == "multipart/form-data";
  if (route->method == Method::kPost && !is_json(type) && !form)
    return error_response(
        415, "UnsupportedMediaType",
        route->body == BodyKind::kJsonOrForm
            ? "expected a request with 'Content-Type: application/json' or "
              "multipart/form-data"
            : "expected a request with 'Content-Type: application/json'");
  if (route->compute && !api_key.empty() &&
      !same_secret(head.header("Authorization"), "Bearer " + api_key)) {
    HttpResponse res = error_response(
        401, "Unauthorized",
        "missing or wrong API key (Authorization: Bearer KEY)");
    res.set_header("WWW-Authenticate", "Bearer");
    return res;
  }
  return std::nullopt;
}

} // namespace il::server

namespace il::server {

bool openai_generation_path(const std::string &path) {
  return path == "/v1/completions" || path == "/v1/chat/completions" || path == "/v1/models";
}

void to_openai_error(HttpResponse &response) {
  std::string message = response.body, type;
  const nlohmann::json j = nlohmann::json::parse(response.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_string()) {
    message = j["error"].get<std::string>();
    if (j.contains("error_type") && j["error_type"].is_string()) type = j["error_type"].get<std::string>();
  }
  const char *kind = response.status == 429   ? "rate_limit_error"
                     : response.status == 401 ? "authentication_error"
                     : response.status >= 500 ? "server_error"
                                              : "invalid_request_error";
  nlohmann::json e = {{"message", message}, {"type", kind}, {"param", nullptr}, {"code", response.status}};
  response.json(nlohmann::json{{"error", e}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

} // namespace il::server
