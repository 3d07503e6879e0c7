#include "server/multipart.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "server/api_error.h"

namespace il::server {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The value of `key` among a header value's ";"-separated parameters (quoted or bare; a quoted
// value may hold ';' and backslash escapes); nullopt when absent.
std::optional<std::string> parameter(std::string_view value, std::string_view key) {
  std::size_t i = value.find(';');
  while (i != std::string_view::npos && i < value.size()) {
    ++i;
    while (i < value.size() && (value[i] == ' ' || value[i] == '\t')) ++i;
    const std::size_t eq = value.find('=', i);
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string name = lower(trim(value.substr(i, eq - i)));
    std::string v;
    std::size_t j = eq + 1;
    if (j < value.size() && value[j] == '"') {
      for (++j; j < value.size() && value[j] != '"'; ++j) {
        if (value[j] == '\\' && j + 1 < value.size()) ++j;
        v += value[j];
      }
      if (j >= value.size()) throw validation_error("multipart: an unterminated quoted parameter in '" +
                                                    std::string(value.substr(0, 200)) + "'");
      ++j;
      i = value.find(';', j);
    } else {
      const std::size_t end = value.find(';', j);
      v = std::string(trim(value.substr(j, end == std::string_view::npos ? std::string_view::npos : end - j)));
      i = end;
    }
    if (name == key) return v;
  }
  return std::nullopt;
}

}  // namespace

std::vector<FormPart> parse_form_data(std::string_view content_type, std::string_view body, std::size_t max_parts) {
  const std::optional<std::string> boundary = parameter(content_type, "boundary");
  if (!boundary || boundary->empty() || boundary->size() > 200)
    throw validation_error("multipart/form-data without a boundary of 1..200 characters in its Content-Type");
  const std::string delimiter = "--" + *boundary;
  // The first delimiter may open the body or follow a preamble line.
  std::size_t pos = body.rfind(delimiter, 0) == 0 ? 0 : body.find("\r\n" + delimiter);
  if (pos == std::string_view::npos) throw validation_error("multipart: the body holds no boundary line");
  if (pos != 0) pos += 2;
  std::vector<FormPart> parts;
  for (;;) {
    pos += delimiter.size();
    if (body.substr(pos, 2) == "--") return parts;  // the closing delimiter
    // Transport padding, then the line break that ends the delimiter line.
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t')) ++pos;
    if (body.substr(pos, 2) != "\r\n") throw validation_error("multipart: a boundary line does not end in CRLF");
    pos += 2;
    if (parts.size() == max_parts)
      throw validation_error("multipart: more than " + std::to_string(max_parts) + " parts");
    FormPart part;
    bool disposition = false;
    for (;;) {  // the part's header lines, up to an empty line
      const std::size_t eol = body.find("\r\n", pos);
      if (eol == std::string_view::npos) throw validation_error("multipart: a part's headers do not end");
      const std::string_view line = body.substr(pos, eol - pos);
      pos = eol + 2;
      if (line.empty()) break;
      const std::size_t colon = line.find(':');
      if (colon == std::string_view::npos)
        throw validation_error("multipart: a part header without ':': '" + std::string(line.substr(0, 200)) + "'");
      const std::string name = lower(trim(line.substr(0, colon)));
      const std::string_view value = trim(line.substr(colon + 1));
      if (name == "content-disposition") {
        if (lower(value.substr(0, value.find(';'))) != "form-data")
          throw validation_error("multipart: a part's Content-Disposition is not form-data");
        disposition = true;
        part.name = parameter(value, "name").value_or("");
        part.filename = parameter(value, "filename").value_or("");
      } else if (name == "content-type") {
        part.content_type = std::string(value);
      }
    }
    if (!disposition || part.name.empty())
      throw validation_error("multipart: part " + std::to_string(parts.size()) +
                             " has no Content-Disposition: form-data with a name");
    const std::size_t end = body.find("\r\n" + delimiter, pos);
    if (end == std::string_view::npos)
      throw validation_error("multipart: part '" + part.name + "' is not closed by the boundary");
    part.data = body.substr(pos, end - pos);
    parts.push_back(std::move(part));
    pos = end + 2;
  }
}

}  // namespace il::server
