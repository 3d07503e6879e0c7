// The server's routes by path and method, and what is decided from a request
// head and the table alone, before any body byte is read: 404 for an unknown
// path, 405 (with Allow) for a method the path does not take, 415 for a POST
// that is not JSON (or multipart/form-data where the route takes uploads), 401 for a compute route without the API key. The server
// (server.cc) and the HTTP fuzz target (fuzz/http_fuzzer.cc) share it, so both
// route a request the same way.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/http_message.h"
#include "server/routes.h"

namespace il::server {

struct Route {
  Method method;
  bool compute; // needs the API key; counts toward the concurrency limit
  Handler handler;
  BodyKind body = BodyKind::kJson;
};

class RouteTable final : public Router {
public:
  void add(Method method, const std::string &path, bool compute,
           Handler handler, BodyKind body = BodyKind::kJson) override;
  // The route for the head's path and method, or nullptr.
  const Route *find(const HttpRequest &head) const;
  // The refusal of a head that no handler may see, or nullopt to go on.
  // `api_key` empty: no authentication.
  std::optional<HttpResponse> screen(const HttpRequest &head,
                                     const std::string &api_key) const;

private:
  std::map<std::string, std::vector<Route>> routes_;
};

// An answer {"error": message, "error_type": type} with that status.
HttpResponse error_response(int status, const std::string &type,
                            const std::string &message);

} // namespace il::server

namespace il::server {

// The OpenAI generation routes (/v1/completions, /v1/chat/completions, /v1/models) answer errors
// in OpenAI's shape, which clients of those routes parse.
bool openai_generation_path(const std::string &path);
// Rewrites an error_response body {"error": m, "error_type": t} as OpenAI's
// {"error": {"message": m, "type": ..., "param": null, "code": status}} (same status).
void to_openai_error(HttpResponse &response);

} // namespace il::server
