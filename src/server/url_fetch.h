// Image inputs given as http(s) URLs, fetched by the server only when the operator allows it
// (serve --fetch-image-urls): from the hosts it names, within a byte cap and a timeout, following
// a few redirects (each one checked again). Runs on the worker that parses the request, never on
// the event loop or the inference thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/serve_options.h"

namespace il::server {

// "http://…" or "https://…" (any case of the scheme).
bool is_http_url(const std::string& ref);

// The body of a 2xx answer to GET `url`. Throws a 422 ApiError naming `where` and the URL when
// fetching is off, the scheme or host is not allowed, the fetch fails or times out, the answer is
// not 2xx, or the body passes opt.max_bytes.
std::vector<std::uint8_t> fetch_url(const std::string& url, const UrlFetchOptions& opt, const std::string& where);

}  // namespace il::server
