// multipart/form-data bodies (RFC 7578), as `curl -F file=@page.png` sends them: the boundary
// from the Content-Type header, then each part's Content-Disposition name / filename, its
// Content-Type, and its bytes. Everything is checked; nothing past the body is read.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace il::server {

struct FormPart {
  std::string name;          // the form field
  std::string filename;      // empty for a plain field
  std::string content_type;  // as sent; may be empty
  std::string_view data;     // into the body given to parse_form_data
};

// The parts in order. Throws a 422 ApiError saying what is malformed (no boundary, a part
// without Content-Disposition or a name, no closing boundary, more than `max_parts` parts).
std::vector<FormPart> parse_form_data(std::string_view content_type, std::string_view body,
                                      std::size_t max_parts = 64);

}  // namespace il::server
