// Reading one HTTP/1.1 request, the parts that need no socket: the limits, what
// Boost.Beast's parser reports turned into answers, the checks of a request
// head before its body is read (framing that a proxy could read differently,
// header count, expectations), and undoing a Content-Encoding within the
// payload limit. The connection code (http_server.cc), the tests and the fuzz
// target share them.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>

#include "server/http_message.h"

namespace il::server {

struct HttpLimits {
  std::size_t header_bytes =
      32 * 1024;                 // request line and headers together; over: 431
  std::size_t max_headers = 100; // header fields; over: 431
  std::size_t body_bytes =
      2'000'000; // decoded body (--payload-limit); over: 413
  std::chrono::seconds idle_timeout{
      5}; // keep-alive: an open connection with no request
  std::chrono::seconds header_timeout{
      10}; // from the first byte of a request to its last header
  std::chrono::seconds body_timeout{
      30}; // the whole body; also each response write
  std::size_t max_connections =
      16384; // open at once; more are answered 503 and closed
};

// A request refused before (or instead of) its handler: status, error_type,
// message.
struct Refusal {
  int status = 400;
  std::string type;
  std::string message;
};

HttpResponse refusal_response(const Refusal &r);

// A parsed head as the routes see it (no body yet).
HttpRequest request_head(const boost::beast::http::request_header<> &h);

// What the parser's error means for the client (431 over the header limit, 413
// over the body limit, 400 for malformed or ambiguous framing).
Refusal parser_refusal(const boost::system::error_code &ec,
                       const HttpLimits &limits);

// Checks of a parsed head, before any body byte is read: too many header
// fields, a Transfer-Encoding other than "chunked" (a proxy and we could frame
// the body differently), Transfer-Encoding together with Content-Length, an
// expectation other than 100-continue, a Content-Length over the limit.
std::optional<Refusal> check_head(const HttpRequest &head,
                                  std::optional<std::uint64_t> content_length,
                                  const HttpLimits &limits);

// Undoes the request's Content-Encoding in place ("identity", "gzip", "x-gzip",
// "deflate"): inflated piece by piece, refused with 413 as soon as the decoded
// size passes `limit`, so a small compressed body cannot become a large
// allocation. Unknown codings are 415.
std::optional<Refusal> decode_body(std::string_view encoding, std::string &body,
                                   std::size_t limit);

// The whole request in `bytes`, parsed with the same parser settings and checks
// as a connection (no socket): the request, or why it was refused. For tests
// and the fuzz target.
struct ParsedRequest {
  std::optional<HttpRequest> request;
  std::optional<Refusal> refusal;
  bool incomplete = false; // the bytes end before the request does
};
ParsedRequest parse_request(std::string_view bytes, const HttpLimits &limits);

} // namespace il::server
