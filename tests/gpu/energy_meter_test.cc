// The GPU energy counter `inferencelayer bench` reports from (backends/cuda/energy_meter.h):
// it reads on a GPU whose driver counts energy, it grows while the device works, and the mean
// power it implies is a board's, not a unit error's.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <chrono>

#include "backends/cuda/energy_meter.h"
#include "gpu_test_util.h"

namespace il::test {
namespace {

TEST(EnergyMeter, CountsTheEnergyOfDeviceWork) {
  IL_REQUIRE_GPU();
  const cuda::EnergyMeter meter(0);
  const std::optional<double> start = meter.joules();
  if (!start) GTEST_SKIP() << "SKIPPED (gpu): no energy counter: " << meter.unavailable_reason();
  EXPECT_EQ(meter.unavailable_reason(), "");
  // About a second of device work (clearing 1 GiB over and over), far above the counter's step.
  void* buffer = nullptr;
  const std::size_t bytes = std::size_t{1} << 30;
  IL_CUDA_CHECK(cudaMalloc(&buffer, bytes));
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1)) {
    for (int i = 0; i < 20; ++i) IL_CUDA_CHECK(cudaMemsetAsync(buffer, i, bytes, nullptr));
    IL_CUDA_CHECK(cudaDeviceSynchronize());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  IL_CUDA_CHECK(cudaFree(buffer));
  const std::optional<double> end = meter.joules();
  ASSERT_TRUE(end.has_value());
  const double watts = (*end - *start) / seconds;
  std::printf("[gpu] energy meter: %.1f J over %.2f s of clearing memory: %.0f W\n", *end - *start, seconds, watts);
  EXPECT_GT(watts, 20.0);
  EXPECT_LT(watts, 2000.0);
}

// A device index the machine does not have reads as unavailable, with the reason, and does not
// leave a CUDA error behind.
TEST(EnergyMeter, AMissingDeviceIsUnavailable) {
  IL_REQUIRE_GPU();
  const cuda::EnergyMeter meter(gpu_count() + 7);
  EXPECT_FALSE(meter.joules().has_value());
  EXPECT_NE(meter.unavailable_reason(), "");
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace il::test
