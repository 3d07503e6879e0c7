// The IL_* switch readers (core/env.h): unset, "0", "1" and other values.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/env.h"

namespace il::test {
namespace {

constexpr const char* kName = "IL_ENV_TEST_SWITCH";

TEST(Env, UnsetEmptyZeroOneAndOtherValues) {
  unsetenv(kName);
  EXPECT_FALSE(env::value(kName).has_value());
  EXPECT_FALSE(env::equals(kName, "1"));
  EXPECT_TRUE(env::on_unless_zero(kName));
  EXPECT_FALSE(env::on_when_set(kName));

  setenv(kName, "0", 1);
  EXPECT_EQ(env::value(kName), "0");
  EXPECT_FALSE(env::on_unless_zero(kName));
  EXPECT_FALSE(env::on_when_set(kName));

  setenv(kName, "1", 1);
  EXPECT_TRUE(env::equals(kName, "1"));
  EXPECT_TRUE(env::on_unless_zero(kName));
  EXPECT_TRUE(env::on_when_set(kName));

  setenv(kName, "always", 1);
  EXPECT_TRUE(env::equals(kName, "always"));
  EXPECT_FALSE(env::equals(kName, "1"));
  EXPECT_TRUE(env::on_when_set(kName));

  setenv(kName, "", 1);  // set but empty: set, not "0"
  EXPECT_EQ(env::value(kName), "");
  EXPECT_TRUE(env::on_unless_zero(kName));
  EXPECT_TRUE(env::on_when_set(kName));
  unsetenv(kName);
}

}  // namespace
}  // namespace il::test
