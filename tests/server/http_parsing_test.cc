// The transport's checks that need no socket: framing, header limits,
// expectations, and Content-Encoding undone within the payload limit
// (parse_request, decode_body).
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "server/http_request.h"

namespace il::server {
namespace {

HttpLimits small_limits() {
  HttpLimits l;
  l.body_bytes = 1000;
  l.header_bytes = 4096;
  l.max_headers = 20;
  return l;
}

std::string gzip(const std::string &data) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef *>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string post(const std::string &headers, const std::string &body) {
  return "POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: "
         "application/json\r\n" +
         headers + "\r\n" + body;
}

TEST(HttpParsing, AWholeRequestParses) {
  const auto p =
      parse_request(post("Content-Length: 2\r\n", "{}"), small_limits());
  ASSERT_TRUE(p.request) << (p.refusal ? p.refusal->message : "incomplete");
  EXPECT_EQ(p.request->method, "POST");
  EXPECT_EQ(p.request->path, "/embed");
  EXPECT_EQ(p.request->body, "{}");
  EXPECT_EQ(p.request->header("content-type"), "application/json");
}

TEST(HttpParsing, ChunkedBodiesCountTowardTheLimit) {
  std::string chunks;
  for (int i = 0; i < 20; ++i)
    chunks += "64\r\n" + std::string(100, 'a') + "\r\n"; // 2000 bytes
  const auto p = parse_request(
      post("Transfer-Encoding: chunked\r\n", chunks + "0\r\n\r\n"),
      small_limits());
  ASSERT_TRUE(p.refusal);
  EXPECT_EQ(p.refusal->status, 413);
  const auto ok = parse_request(
      post("Transfer-Encoding: chunked\r\n", "2\r\n{}\r\n0\r\n\r\n"),
      small_limits());
  ASSERT_TRUE(ok.request);
  EXPECT_EQ(ok.request->body, "{}");
}

TEST(HttpParsing, ContentLengthOverTheLimitIsRefusedFromTheHead) {
  const auto p =
      parse_request(post("Content-Length: 5000\r\n", ""), small_limits());
  ASSERT_TRUE(p.refusal);
  EXPECT_EQ(p.refusal->status, 413);
}

TEST(HttpParsing, AmbiguousFramingIs400) {
  for (const std::string &h :
       {std::string("Content-Length: 2\r\nTransfer-Encoding: chunked\r\n"),
        std::string("Transfer-Encoding: chunked\r\nContent-Length: 2\r\n"),
        std::string("Content-Length: 2\r\nContent-Length: 3\r\n"),
        std::string("Transfer-Encoding: gzip\r\n"),
        std::string(
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"),
        std::string("Transfer-Encoding: gzip, chunked\r\n")}) {
    const auto p = parse_request(post(h, "{}"), small_limits());
    ASSERT_TRUE(p.refusal) << h;
    EXPECT_EQ(p.refusal->status, 400) << h;
  }
}

TEST(HttpParsing, TooManyOrTooLargeHeadersAre431) {
  std::string many;
  for (int i = 0; i < 30; ++i)
    many += "X-H" + std::to_string(i) + ": v\r\n";
  const auto p =
      parse_request(post(many + "Content-Length: 2\r\n", "{}"), small_limits());
  ASSERT_TRUE(p.refusal);
  EXPECT_EQ(p.refusal->status, 431);
  const auto big = parse_request(
      post("X-Big: " + std::string(5000, 'v') + "\r\n", ""), small_limits());
  ASSERT_TRUE(big.refusal);
  EXPECT_EQ(big.refusal->status, 431);
}

TEST(HttpParsing, OnlyTheContinueExpectationIsAccepted) {
  const auto p = parse_request(
      post("Expect: something\r\nContent-Length: 2\r\n", "{}"), small_limits());
  ASSERT_TRUE(p.refusal);
  EXPECT_EQ(p.refusal->status, 417);
  EXPECT_TRUE(
      parse_request(post("Expect: 100-continue\r\nContent-Length: 2\r\n", "{}"),
                    small_limits())
          .request);
}

TEST(HttpParsing, GzipBodiesInflateWithinTheLimit) {
  const std::string body = "{\"inputs\": \"" + std::string(500, 'x') + "\"}";
  const std::string z = gzip(body);
  const auto p =
      parse_request(post("Content-Encoding: gzip\r\nContent-Length: " +
                             std::to_string(z.size()) + "\r\n",
                         z),
                    small_limits());
  ASSERT_TRUE(p.request) << (p.refusal ? p.refusal->message : "incomplete");
  EXPECT_EQ(p.request->body, body);
}

TEST(HttpParsing, AGzipBombIsRefusedAtTheLimit) {
  // 100 MB of zeros compress to ~100 KB; decoding stops at the 1000-byte limit.
  std::string body = gzip(std::string(100'000'000, '0'));
  std::string copy = body;
  const auto r = decode_body("gzip", copy, 1000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
}

TEST(HttpParsing, CorruptOrUnknownEncodingsAreRefused) {
  std::string junk = "not gzip at all";
  auto r = decode_body("gzip", junk, 1000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  std::string truncated = gzip(std::string(5000, 'a')).substr(0, 10);
  r = decode_body("gzip", truncated, 100000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  std::string any = "x";
  r = decode_body("br", any, 1000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 415);
  std::string plain = "{}";
  EXPECT_FALSE(decode_body("identity", plain, 1000));
  EXPECT_EQ(plain, "{}");
}

TEST(HttpParsing, IncompleteRequestsSayIncomplete) {
  EXPECT_TRUE(
      parse_request("POST /embed HTTP/1.1\r\nHost: x\r\n", small_limits())
          .incomplete);
  EXPECT_TRUE(
      parse_request(post("Content-Length: 10\r\n", "{}"), small_limits())
          .incomplete);
}

TEST(HttpParsing, MalformedRequestLinesAre400) {
  for (const std::string &bad :
       {std::string("GARBAGE\r\n\r\n"), std::string("GET / HTTP/9.9\r\n\r\n"),
        std::string("GET /\r\n\r\n"),
        std::string("GET / HTTP/1.1\r\nNo colon here\r\n\r\n"),
        std::string("GET / HTTP/1.1\r\n Folded: x\r\n\r\n")}) {
    const auto p = parse_request(bad, small_limits());
    ASSERT_TRUE(p.refusal) << bad;
    EXPECT_EQ(p.refusal->status, 400) << bad;
  }
}

} // namespace
} // namespace il::server
