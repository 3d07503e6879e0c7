// multipart/form-data parsing (server/multipart.h): parts, names, file names, content types,
// quoted parameters, a preamble; and every malformed form refused with a 422 saying why.
#include <gtest/gtest.h>

#include <string>

#include "server/api_error.h"
#include "server/multipart.h"

namespace il::server {
namespace {

TEST(FormData, ReadsFieldsAndFiles) {
  static const char kBody[] =
      "preamble\r\n--b0\r\nContent-Disposition: form-data; name=\"pages\"\r\n\r\n1-3\r\n"
      "--b0\r\ncontent-disposition: form-data; name=file; filename=\"a;b \\\"c\\\".png\"\r\n"
      "Content-Type: image/png\r\n\r\n\x89PNG\r\n\x00\x01\r\n--b0--\r\nepilogue";
  const std::string body(kBody, sizeof kBody - 1);  // the NUL inside the file part included
  const auto parts = parse_form_data("multipart/form-data; boundary=\"b0\"", std::string_view(body.data(), body.size()));
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].name, "pages");
  EXPECT_EQ(parts[0].filename, "");
  EXPECT_EQ(parts[0].data, "1-3");
  EXPECT_EQ(parts[1].name, "file");
  EXPECT_EQ(parts[1].filename, "a;b \"c\".png");
  EXPECT_EQ(parts[1].content_type, "image/png");
  EXPECT_EQ(parts[1].data, std::string_view("\x89PNG\r\n\x00\x01", 8));  // CRLF and NUL inside a part kept
}

TEST(FormData, RefusesMalformedForms) {
  const auto says = [](const std::string& type, const std::string& body) {
    try {
      (void)parse_form_data(type, body, 2);
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 422);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string one = "--x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n";
  EXPECT_NE(says("multipart/form-data", one + "--x--").find("boundary"), std::string::npos);
  EXPECT_NE(says("multipart/form-data; boundary=x", "no delimiter").find("no boundary line"), std::string::npos);
  EXPECT_NE(says("multipart/form-data; boundary=x", one).find("not closed"), std::string::npos);
  EXPECT_NE(says("multipart/form-data; boundary=x", "--x\r\nContent-Type: a/b\r\n\r\nv\r\n--x--").find("no Content-Disposition"),
            std::string::npos);
  EXPECT_NE(says("multipart/form-data; boundary=x", "--x\r\nContent-Disposition: attachment; name=a\r\n\r\nv\r\n--x--")
                .find("not form-data"),
            std::string::npos);
  EXPECT_NE(says("multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=a").find("do not end"),
            std::string::npos);
  EXPECT_NE(says("multipart/form-data; boundary=x", one + one + one + "--x--").find("more than 2 parts"),
            std::string::npos);
  EXPECT_NE(says("multipart/form-data; boundary=x", "--xjunk\r\n").find("CRLF"), std::string::npos);
  EXPECT_NE(says("multipart/form-data; boundary=\"x", one + "--x--").find("unterminated"), std::string::npos);
  EXPECT_EQ(says("multipart/form-data; boundary=x", one + "--x--"), "accepted");
}

}  // namespace
}  // namespace il::server
