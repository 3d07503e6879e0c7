// The erf-GELU the f16 / bf16 epilogues apply (ops/gelu_erf_fast.h with the device's reciprocal
// and exp2), on every 16-bit input pattern, through the vector launch paths of
// bias_activation_cuda: dense rows without bias (the flat kernel), a strided window and rows with
// a bias (zeros, so the input is unchanged), both the 16-byte vector kernel. The scalar kernel
// and the few-row GEMM apply the same function; the op parity tests cover them on random data. Against the exact GELU correctly rounded to the type: every finite
// input within one unit in the last place, and few off by one at all (the CPU test of the same
// function bounds the approximation alone at 16 per type; the device's approximate reciprocal
// and exp2 may add a few ties, so up to 64 here, 0.1 % of the inputs). One exception, exact: the
// device's exp2 flushes results below f32's smallest normal (2⁻¹²⁶) to zero, so where the exact
// GELU is that small (bf16 inputs below about −13.2) the output may be a signed zero; PyTorch's
// f32 erf formula returns zero there already from about −5.5.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "../unit/gelu_reference.h"
#include "gpu_test_util.h"
#include "half_test_util.h"
#include "ops/ops_cuda.h"

namespace il::test {
namespace {

constexpr std::size_t kSide = 256;  // 256 × 256 = every 16-bit pattern once

struct Path {
  const char* name;
  std::size_t ld;  // row stride in elements (≥ kSide)
  bool bias;
};

void check_path(DType t, const Path& path) {
  const Half16& type = t == DType::kF16 ? kF16 : kBF16;
  std::vector<uint16_t> host(kSide * path.ld, 0);
  for (std::size_t r = 0; r < kSide; ++r)
    for (std::size_t c = 0; c < kSide; ++c) host[r * path.ld + c] = static_cast<uint16_t>(r * kSide + c);
  DeviceArray<uint16_t> y(host);
  DeviceArray<uint16_t> zeros(std::vector<uint16_t>(kSide, 0));
  ops::bias_activation_cuda({{y.get(), t, path.ld}, {path.bias ? zeros.get() : nullptr, t, 0}, kSide, kSide,
                             Activation::kGeluErf},
                            nullptr);
  IL_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<uint16_t> out = y.download();
  long differ = 0, worst = 0, nan_ok = 0, flushed = 0;
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const std::size_t at = (bits / kSide) * path.ld + bits % kSide;
    const float x = type.decode(static_cast<uint16_t>(bits));
    const uint16_t got = out[at];
    if (std::isnan(x) || x == -INFINITY) {  // NaN in, and −inf · Φ(−inf) = NaN, as PyTorch
      EXPECT_TRUE(std::isnan(type.decode(got))) << type.name << " " << path.name << " input " << x;
      ++nan_ok;
      continue;
    }
    const long double exact = exact_gelu(x);
    if ((got & 0x7fffu) == 0 && std::fabs(exact) < 0x1p-126L) {
      ++flushed;
      continue;
    }
    const long apart = ulps_apart(got, round_to(type, exact));
    if (apart != 0) ++differ;
    if (apart > worst) worst = apart;
    if (apart > 1) ADD_FAILURE() << type.name << " " << path.name << ": GELU(" << x << ") = " << type.decode(got)
                                 << ", exact " << static_cast<double>(exact) << " (" << apart << " ulp)";
  }
  std::printf("[gelu] %s, %s: %ld inputs off by one ulp (worst %ld), %ld flushed to zero below 2^-126, %ld NaN cases\n",
              type.name, path.name, differ, worst, flushed, nan_ok);
  EXPECT_LE(differ, 64) << type.name << " " << path.name;
  for (std::size_t r = 0; r < kSide; ++r)  // the stride's padding is never written
    for (std::size_t c = kSide; c < path.ld; ++c) ASSERT_EQ(out[r * path.ld + c], 0) << path.name;
}

TEST(GpuGeluErf, EveryHalfInputOnEveryPath) {
  IL_REQUIRE_GPU();
  for (DType t : {DType::kF16, DType::kBF16})
    for (const Path& p : {Path{"dense", kSide, false}, Path{"strided", kSide + 8, false}, Path{"bias", kSide, true}})
      check_path(t, p);
}

}  // namespace
}  // namespace il::test
