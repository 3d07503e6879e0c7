#include "server/http_message.h"

#include <algorithm>

namespace il::server {
namespace {

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string find_header(const HeaderList &headers, std::string_view name) {
  for (const auto &[k, v] : headers)
    if (iequals(k, name))
      return v;
  return {};
}

} // namespace

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(),
                    [](char x, char y) { return lower(x) == lower(y); });
}

std::string HttpRequest::header(std::string_view name) const {
  return find_header(headers, name);
}

bool HttpRequest::has_header(std::string_view name) const {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto &h) { return iequals(h.first, name); });
}

void HttpResponse::set_header(std::string name, std::string value) {
  for (auto &[k, v] : headers)
    if (iequals(k, name)) {
      v = std::move(value);
      return;
    }
  headers.emplace_back(std::move(name), std::move(value));
}

std::string HttpResponse::header(std::string_view name) const {
  return find_header(headers, name);
}

} // namespace il::server
