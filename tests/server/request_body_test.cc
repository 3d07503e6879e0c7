// The JSON body of a request as every route reads it (parse_body): whatever the
// client sends is a JSON object or a 422 naming the problem, never an exception
// that the server would answer with a 500.
#include <gtest/gtest.h>

#include <string>

#include "server/api_error.h"
#include "server/context.h"

namespace il::server {
namespace {

HttpRequest with_body(const std::string &body) {
  HttpRequest req;
  req.method = "POST";
  req.target = req.path = "/embed";
  req.body = body;
  return req;
}

// The status and message parse_body refuses the body with; 0 when it parses.
std::pair<int, std::string> refusal_of(const std::string &body) {
  try {
    (void)parse_body(with_body(body));
    return {0, ""};
  } catch (const ApiError &e) {
    return {e.status(), e.what()};
  }
}

TEST(RequestBody, AnObjectParses) {
  EXPECT_EQ(refusal_of(R"({"inputs": [1, 2.5e300, -1e-400]})").first, 0);
}

TEST(RequestBody, MalformedJsonIsAValidationError) {
  const auto [status, message] = refusal_of(R"({"inputs": )");
  EXPECT_EQ(status, 422);
  EXPECT_NE(message.find("invalid JSON body"), std::string::npos) << message;
}

// Found by fuzz/http_fuzzer.cc (fuzz/regressions/http_fuzzer/decode_number_overflow):
// the JSON library reports a number too large for a double as out_of_range, not
// as a parse error, and it escaped parse_body: /decode answered
// {"ids":[[2,31e3086]]} with 500 "internal error".
TEST(RequestBody, ANumberTooLargeForADoubleIsAValidationError) {
  for (const std::string body :
       {R"({"inputs": 1e400})", R"({"ids": [[2, 592, 31e3086, 7]]})",
        R"({"dimensions": -1e309})"}) {
    const auto [status, message] = refusal_of(body);
    EXPECT_EQ(status, 422) << body;
    EXPECT_NE(message.find("number overflow"), std::string::npos) << message;
    EXPECT_EQ(message.find("[json.exception"), std::string::npos) << message;
  }
}

} // namespace
} // namespace il::server
