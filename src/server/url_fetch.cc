#include "server/url_fetch.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <optional>

#include "server/api_error.h"

namespace il::server {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

struct ParsedUrl {
  std::string scheme;  // "http" or "https"
  std::string host;    // without brackets for an IPv6 literal
  int port = 0;
  std::string target;  // path and query, "/" at least
  std::string origin() const {
    const bool v6 = host.find(':') != std::string::npos;
    return scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
  }
};

// scheme://host[:port][/path][?query][#fragment]; nullopt names what is wrong in `why`.
std::optional<ParsedUrl> parse_url(const std::string& url, std::string& why) {
  ParsedUrl u;
  const std::size_t sep = url.find("://");
  if (sep == std::string::npos) {
    why = "not an absolute http(s) URL";
    return std::nullopt;
  }
  u.scheme = lower(url.substr(0, sep));
  if (u.scheme != "http" && u.scheme != "https") {
    why = "the scheme '" + u.scheme + "' is not http or https";
    return std::nullopt;
  }
  const std::size_t start = sep + 3;
  const std::size_t end = url.find_first_of("/?#", start);
  std::string authority = url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (authority.find('@') != std::string::npos) {
    why = "credentials in the URL are not sent";
    return std::nullopt;
  }
  std::string port;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string::npos) {
      why = "an IPv6 host without its closing ']'";
      return std::nullopt;
    }
    u.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') {
        why = "characters after the IPv6 host";
        return std::nullopt;
      }
      port = authority.substr(close + 2);
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (u.host.empty()) {
    why = "no host";
    return std::nullopt;
  }
  u.host = lower(u.host);
  u.port = u.scheme == "https" ? 443 : 80;
  if (!port.empty()) {
    if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); }) ||
        std::stoi(port) < 1 || std::stoi(port) > 65535) {
      why = "the port '" + port + "' is not 1..65535";
      return std::nullopt;
    }
    u.port = std::stoi(port);
  }
  std::string rest = end == std::string::npos ? std::string() : url.substr(end);
  rest = rest.substr(0, rest.find('#'));
  u.target = rest.empty() || rest.front() != '/' ? "/" + rest : rest;
  return u;
}

// A redirect's Location against the URL that answered it: absolute, scheme-relative ("//host/…"),
// or a path on the same origin.
std::string resolve(const ParsedUrl& base, const std::string& location) {
  if (location.find("://") != std::string::npos) return location;
  if (location.rfind("//", 0) == 0) return base.scheme + ":" + location;
  const std::string origin = base.origin();
  if (!location.empty() && location.front() == '/') return origin + location;
  const std::string path = base.target.substr(0, base.target.find('?'));
  return origin + path.substr(0, path.rfind('/') + 1) + location;
}

}  // namespace

bool is_http_url(const std::string& ref) {
  const std::string head = lower(ref.substr(0, 8));
  return head.rfind("http://", 0) == 0 || head.rfind("https://", 0) == 0;
}

std::vector<std::uint8_t> fetch_url(const std::string& url, const UrlFetchOptions& opt, const std::string& where) {
  const auto refuse = [&](const std::string& what) {
    return validation_error(where + ": the image URL " + url + " " + what);
  };
  if (!opt.enabled)
    throw validation_error(where + ": this server fetches no URLs (its operator can allow them with "
                           "--fetch-image-urls); send the image itself as base64 or a data: URI");
  // One deadline for the whole fetch, redirects included: a host that trickles bytes cannot hold
  // the worker past it (each read also times out on its own).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opt.timeout_s);
  std::string current = url;
  for (int hop = 0;; ++hop) {
    std::string why;
    const std::optional<ParsedUrl> u = parse_url(current, why);
    if (!u) throw refuse(hop ? "redirects to " + current + ": " + why : "cannot be fetched: " + why);
    if (!opt.hosts.empty() && std::none_of(opt.hosts.begin(), opt.hosts.end(),
                                           [&](const std::string& h) { return lower(h) == u->host; }))
      throw refuse((hop ? "redirects to host " : "names host ") + u->host + ", which --fetch-url-hosts does not list");

    httplib::Client client(u->origin());
    client.set_connection_timeout(opt.timeout_s, 0);
    client.set_read_timeout(opt.timeout_s, 0);
    client.set_write_timeout(opt.timeout_s, 0);
    client.set_follow_location(false);  // each hop is checked here
    int status = 0;
    std::string location;
    std::vector<std::uint8_t> body;
    bool too_large = false, too_slow = false;
    const httplib::Result r = client.Get(
        u->target, httplib::Headers{{"Accept", "image/*"}},
        [&](const httplib::Response& head) {
          status = head.status;
          if (status >= 300 && status < 400) {
            location = head.get_header_value("Location");
            return false;
          }
          if (status < 200 || status >= 300) return false;
          const std::string length = head.get_header_value("Content-Length");
          const bool digits = !length.empty() && length.size() < 20 &&
                              std::all_of(length.begin(), length.end(), [](unsigned char c) { return std::isdigit(c); });
          if (digits && std::stoull(length) > opt.max_bytes) {
            too_large = true;
            return false;
          }
          return true;
        },
        [&](const char* data, std::size_t n) {
          if (std::chrono::steady_clock::now() > deadline) {
            too_slow = true;
            return false;
          }
          if (body.size() + n > opt.max_bytes) {
            too_large = true;
            return false;
          }
          body.insert(body.end(), reinterpret_cast<const std::uint8_t*>(data),
                      reinterpret_cast<const std::uint8_t*>(data) + n);
          return true;
        });
    if (too_slow || std::chrono::steady_clock::now() > deadline)
      throw refuse("was not fetched within " + std::to_string(opt.timeout_s) + " s (--fetch-url-timeout)");
    if (too_large)
      throw refuse("is larger than " + std::to_string(opt.max_bytes) + " bytes (--fetch-url-max-bytes)");
    if (status >= 300 && status < 400 && !location.empty()) {
      if (hop >= opt.max_redirects)
        throw refuse("redirects more than " + std::to_string(opt.max_redirects) + " times");
      current = resolve(*u, location);
      continue;
    }
    if (status != 0 && (status < 200 || status >= 300))
      throw refuse("answered HTTP " + std::to_string(status));
    if (!r) throw refuse("could not be fetched: " + httplib::to_string(r.error()));
    if (body.empty()) throw refuse("answered an empty body");
    return body;
  }
}

}  // namespace il::server
