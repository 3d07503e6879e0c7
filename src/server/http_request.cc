#include "server/http_request.h"

#include <algorithm>
#include <cctype>

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <zlib.h>

#include "server/api_error.h"

namespace il::server {
namespace http = boost::beast::http;
namespace {

std::string trim_lower(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::optional<std::uint64_t>
content_length_of(const http::request_parser<http::string_body> &p) {
  const auto n = p.content_length();
  return n ? std::optional<std::uint64_t>(*n) : std::nullopt;
}

Refusal too_large(std::size_t limit) {
  return {413, "PayloadTooLarge",
          "the request body is larger than the payload limit of " +
              std::to_string(limit) + " bytes (--payload-limit)"};
}

} // namespace

HttpResponse refusal_response(const Refusal &r) {
  HttpResponse res;
  res.status = r.status;
  res.json(error_body(r.message, r.type));
  return res;
}

HttpRequest request_head(const http::request_header<> &h) {
  HttpRequest req;
  req.method = std::string(h.method_string());
  req.target = std::string(h.target());
  req.path = req.target.substr(0, req.target.find('?'));
  for (const auto &f : h)
    req.headers.emplace_back(std::string(f.name_string()),
                             std::string(f.value()));
  return req;
}

Refusal parser_refusal(const boost::system::error_code &ec,
                       const HttpLimits &limits) {
  if (ec == http::error::header_limit)
    return {431, "Validation",
            "the request head is larger than " +
                std::to_string(limits.header_bytes) + " bytes"};
  if (ec == http::error::body_limit)
    return too_large(limits.body_bytes);
  if (ec == http::error::bad_transfer_encoding ||
      ec == http::error::bad_content_length ||
      ec == http::error::multiple_content_length)
    return {400, "Validation",
            "ambiguous message framing: " + ec.message() +
                " (one Content-Length, or Transfer-Encoding: chunked alone)"};
  return {400, "Validation", "malformed HTTP request: " + ec.message()};
}

std::optional<Refusal> check_head(const HttpRequest &head,
                                  std::optional<std::uint64_t> content_length,
                                  const HttpLimits &limits) {
  if (head.headers.size() > limits.max_headers)
    return Refusal{431, "Validation",
                   "the request has " + std::to_string(head.headers.size()) +
                       " header fields, more than the " +
                       std::to_string(limits.max_headers) + " allowed"};
  std::size_t transfer_encodings = 0, content_lengths = 0;
  for (const auto &[name, value] : head.headers) {
    if (iequals(name, "Transfer-Encoding")) {
      ++transfer_encodings;
      if (trim_lower(value) != "chunked")
        return Refusal{400, "Validation",
                       "Transfer-Encoding '" + value.substr(0, 64) +
                           "' is not supported: only 'chunked'"};
    }
    if (iequals(name, "Content-Length"))
      ++content_lengths;
  }
  // The parser refuses most of these; checked here too so that the rule does
  // not depend on the order the fields came in.
  if (transfer_encodings > 1 || (transfer_encodings && content_lengths))
    return Refusal{400, "Validation",
                   "ambiguous message framing: Transfer-Encoding with "
                   "Content-Length, or repeated"};
  const std::string expect = trim_lower(head.header("Expect"));
  if (!expect.empty() && expect != "100-continue")
    return Refusal{417, "Validation",
                   "the only expectation supported is 100-continue"};
  if (content_length && *content_length > limits.body_bytes)
    return too_large(limits.body_bytes);
  return std::nullopt;
}

std::optional<Refusal> decode_body(std::string_view encoding, std::string &body,
                                   std::size_t limit) {
  const std::string coding = trim_lower(encoding);
  if (coding.empty() || coding == "identity")
    return std::nullopt;
  if (coding != "gzip" && coding != "x-gzip" && coding != "deflate")
    return Refusal{415, "Validation",
                   "Content-Encoding '" + std::string(encoding.substr(0, 64)) +
                       "' is not supported: send identity, gzip or deflate"};
  z_stream z{};
  // 15 + 32: a zlib or a gzip header, whichever it is (clients label raw zlib
  // "deflate").
  if (inflateInit2(&z, 15 + 32) != Z_OK)
    return Refusal{503, "Overloaded", "cannot start the decompressor"};
  std::string out;
  z.next_in = reinterpret_cast<Bytef *>(body.data());
  z.avail_in = static_cast<uInt>(body.size());
  int rc = Z_OK;
  char piece[64 * 1024];
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef *>(piece);
    z.avail_out = sizeof piece;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      const bool truncated = rc == Z_BUF_ERROR;
      inflateEnd(&z);
      return Refusal{400, "Validation",
                     std::string("the ") + coding + " body is " +
                         (truncated ? "truncated" : "corrupt")};
    }
    const std::size_t n = sizeof piece - z.avail_out;
    if (out.size() + n > limit) {
      inflateEnd(&z);
      return too_large(limit);
    }
    out.append(piece, n);
  }
  const bool trailing = z.avail_in != 0;
  inflateEnd(&z);
  if (trailing)
    return Refusal{400, "Validation",
                   "data after the end of the " + coding + " body"};
  body = std::move(out);
  return std::nullopt;
}

ParsedRequest parse_request(std::string_view bytes, const HttpLimits &limits) {
  ParsedRequest out;
  http::request_parser<http::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(limits.header_bytes));
  parser.body_limit(limits.body_bytes);
  parser.eager(false); // stop after the head, as a connection does
  boost::system::error_code ec;
  std::size_t used = 0;
  auto put = [&] {
    while (used < bytes.size() && !ec && !parser.is_done() &&
           !(parser.is_header_done() && !parser.eager())) {
      const std::size_t n = parser.put(
          boost::asio::buffer(bytes.data() + used, bytes.size() - used), ec);
      used += n;
      if (ec == http::error::need_more) {
        ec = {};
        break;
      }
      if (n == 0)
        break;
    }
  };
  put();
  if (ec) {
    out.refusal = parser_refusal(ec, limits);
    return out;
  }
  if (!parser.is_header_done()) {
    out.incomplete = true;
    return out;
  }
  HttpRequest req = request_head(parser.get().base());
  req.keep_alive = parser.keep_alive();
  if (auto r = check_head(req, content_length_of(parser), limits)) {
    out.refusal = std::move(r);
    return out;
  }
  parser.eager(true);
  put();
  if (ec) {
    out.refusal = parser_refusal(ec, limits);
    return out;
  }
  if (!parser.is_done()) {
    out.incomplete = true;
    return out;
  }
  req.body = std::move(parser.get().body());
  if (auto r = decode_body(req.header("Content-Encoding"), req.body,
                           limits.body_bytes)) {
    out.refusal = std::move(r);
    return out;
  }
  out.request = std::move(req);
  return out;
}

} // namespace il::server
