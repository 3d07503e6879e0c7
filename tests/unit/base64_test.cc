// core/base64: strict decoding (tokenizer.json charsmaps, images sent as base64) and encoding.
#include <gtest/gtest.h>

#include <string>

#include "core/base64.h"

namespace il {
namespace {

TEST(Base64, DecodingIsStrict) {
  EXPECT_EQ(decode_base64(""), std::string());
  EXPECT_EQ(decode_base64("YQ=="), "a");
  EXPECT_EQ(decode_base64("YWI="), "ab");
  EXPECT_EQ(decode_base64("YWJj"), "abc");
  EXPECT_EQ(decode_base64("+/+/"), "\xFB\xFF\xBF");
  EXPECT_FALSE(decode_base64("YQ"));      // padding required
  EXPECT_FALSE(decode_base64("YR=="));    // leftover bits set
  EXPECT_FALSE(decode_base64("YQ==YQ==")); // padding only at the end
  EXPECT_FALSE(decode_base64("Y Q=="));
  EXPECT_FALSE(decode_base64("Y-_="));    // URL-safe alphabet is not the standard one
}

TEST(Base64, EncodingRoundTrips) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  for (std::size_t n : {0u, 1u, 2u, 3u, 4u, 255u, 256u}) {
    std::string out;
    append_base64(out, reinterpret_cast<const unsigned char*>(all.data()), n);
    EXPECT_EQ(out.size(), (n + 2) / 3 * 4);
    EXPECT_EQ(decode_base64(out), all.substr(0, n)) << n;
  }
  std::string out;
  append_base64(out, reinterpret_cast<const unsigned char*>("ab"), 2);
  EXPECT_EQ(out, "YWI=");
}

}  // namespace
}  // namespace il

namespace il {
namespace {

TEST(Base64, DataUrisCarryBase64Only) {
  std::string why;
  EXPECT_EQ(decode_base64_or_data_uri("data:image/png;base64,YWI=", why), "ab");
  EXPECT_EQ(decode_base64_or_data_uri("YWI=", why), "ab");
  EXPECT_FALSE(decode_base64_or_data_uri("data:image/png,YWI=", why));
  EXPECT_NE(why.find("data: URI"), std::string::npos) << why;
  EXPECT_FALSE(decode_base64_or_data_uri("data:image/png;base64,Y WI=", why));
  EXPECT_NE(why.find("base64"), std::string::npos) << why;
}

}  // namespace
}  // namespace il
