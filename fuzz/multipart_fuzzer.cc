// multipart/form-data bodies (server/multipart.h) as /ocr receives uploads: the input's first
// line is the Content-Type header value, the rest the body. Expected outcomes: the parts, each a
// view inside the body, or a 422 ApiError. Anything else is a finding (a crash, a sanitizer
// report, another exception, a part outside the body, a status other than 422).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "server/api_error.h"
#include "server/multipart.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t eol = input.find('\n');
  const std::string_view type = input.substr(0, eol);
  const std::string_view body = eol == std::string_view::npos ? std::string_view() : input.substr(eol + 1);
  try {
    for (const il::server::FormPart& p : il::server::parse_form_data(type, body)) {
      const bool inside = p.data.data() >= body.data() && p.data.data() + p.data.size() <= body.data() + body.size();
      if (!inside || p.name.empty()) {
        std::fprintf(stderr, "a part outside the body or without a name\n");
        std::abort();
      }
    }
  } catch (const il::server::ApiError& e) {
    if (e.status() != 422) {
      std::fprintf(stderr, "status %d: %s\n", e.status(), e.what());
      std::abort();
    }
  }
  return 0;
}
