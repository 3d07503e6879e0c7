// The float text of every JSON answer (CLI and server): the shortest decimal that parses back to
// the same f32, and null for what JSON has no number for.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/float_format.h"

namespace il {
namespace {

std::string text(float v) {
  std::string s;
  append_float(s, v);
  return s;
}

TEST(FloatFormat, ShortestRoundTrip) {
  EXPECT_EQ(text(0.0f), "0");
  EXPECT_EQ(text(-0.0f), "-0");
  EXPECT_EQ(text(1.0f), "1");
  EXPECT_EQ(text(0.1f), "0.1");
  EXPECT_EQ(text(-2.5f), "-2.5");
  EXPECT_EQ(text(1e-7f), "1e-07");
  EXPECT_EQ(text(3.4028235e38f), "3.4028235e+38");
  // Every float of a spread of magnitudes reads back bit for bit.
  for (float v = 1e-30f; v < 1e30f; v *= 1.37f) {
    for (const float x : {v, -v, std::nextafter(v, 0.0f)}) {
      const std::string s = text(x);
      EXPECT_EQ(std::strtof(s.c_str(), nullptr), x) << s;
    }
  }
}

TEST(FloatFormat, NonFiniteIsNull) {
  EXPECT_EQ(text(std::numeric_limits<float>::quiet_NaN()), "null");
  EXPECT_EQ(text(std::numeric_limits<float>::infinity()), "null");
  EXPECT_EQ(text(-std::numeric_limits<float>::infinity()), "null");
}

TEST(FloatFormat, Arrays) {
  const float v[] = {1.5f, std::numeric_limits<float>::quiet_NaN(), -0.25f};
  std::string s = "x";
  append_floats(s, v, 3);
  EXPECT_EQ(s, "x[1.5,null,-0.25]");
  s.clear();
  append_floats(s, v, 0);
  EXPECT_EQ(s, "[]");
}

}  // namespace
}  // namespace il
