// ops/gelu_erf_fast.h on every finite f16 and bf16 input, against the exact GELU correctly
// rounded to the type. The host build of the function uses exact reciprocals and exp2, so this
// checks the approximation itself; tests/gpu checks the kernel with the device's instructions.
#include "ops/gelu_erf_fast.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gelu_reference.h"

namespace il::test {
namespace {

// max_differ: inputs allowed one ulp off, as measured when the fit was made (f16 7, bf16 0) plus
// one for a libm whose exp2 rounds differently; a changed coefficient misses hundreds.
void check_every_input(const Half16& type, long max_differ) {
  long inputs = 0, differ = 0, worst = 0, erff_differ = 0;
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const float x = type.decode(static_cast<uint16_t>(bits));
    if (!std::isfinite(x)) continue;
    ++inputs;
    const uint16_t want = round_to(type, exact_gelu(x));
    const uint16_t got = round_to(type, ops::gelu_fast::gelu_erf(x));
    const long apart = ulps_apart(got, want);
    if (apart != 0) ++differ;
    worst = std::max(worst, apart);
    // The formula PyTorch evaluates in f32, for comparison only.
    const float torch_like = 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    if (ulps_apart(round_to(type, torch_like), want) != 0) ++erff_differ;
  }
  std::printf("[gelu] %s: %ld finite inputs, %ld not correctly rounded (worst %ld ulp); the f32 erf formula: %ld\n",
              type.name, inputs, differ, worst, erff_differ);
  EXPECT_LE(worst, 1) << type.name;
  EXPECT_LE(differ, max_differ) << type.name << ": more inputs off by one than the fit's error allows";
}

TEST(GeluErfFast, EveryF16InputWithinOneUlpOfExact) { check_every_input(kF16, 8); }
TEST(GeluErfFast, EveryBf16InputWithinOneUlpOfExact) { check_every_input(kBF16, 1); }

TEST(GeluErfFast, SpecialValues) {
  EXPECT_EQ(ops::gelu_fast::gelu_erf(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(ops::gelu_fast::gelu_erf(-INFINITY)));  // −inf · Φ(−inf) = −inf · 0, as PyTorch
  EXPECT_TRUE(std::isnan(ops::gelu_fast::gelu_erf(NAN)));
  EXPECT_EQ(ops::gelu_fast::gelu_erf(0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(ops::gelu_fast::gelu_erf(-0.0f)));
  EXPECT_EQ(ops::gelu_fast::gelu_erf(-30.0f), 0.0f);  // the tail underflows to a negative zero
  EXPECT_TRUE(std::signbit(ops::gelu_fast::gelu_erf(-30.0f)));
  EXPECT_EQ(ops::gelu_fast::gelu_erf(30.0f), 30.0f);
}

}  // namespace
}  // namespace il::test
