#include <array>
#include <atomic>
#include <cstdlib>
#include <string>

#include "ops/launch_cuda.cuh"

namespace il::ops::pdl {

bool enabled() {
  static const bool allowed = [] {
    const char* v = std::getenv("IL_CUDA_PDL");
    return v == nullptr || std::string(v) != "0";
  }();
  if (!allowed) return false;
  // Per device: 0 unknown, 1 yes, 2 no (compute capability below 9.0).
  static std::array<std::atomic<int>, 64> known{};
  int device = 0;
  IL_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= static_cast<int>(known.size())) return false;
  int state = known[static_cast<std::size_t>(device)].load(std::memory_order_relaxed);
  if (state == 0) {
    int major = 0;
    IL_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    state = major >= 9 ? 1 : 2;
    known[static_cast<std::size_t>(device)].store(state, std::memory_order_relaxed);
  }
  return state == 1;
}

}  // namespace il::ops::pdl

namespace il::ops {

bool current_device_is_sm90() {
  // Per device: 0 unknown, 1 yes, 2 no.
  static std::array<std::atomic<int>, 64> known{};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= static_cast<int>(known.size())) return false;
  int state = known[static_cast<std::size_t>(device)].load(std::memory_order_relaxed);
  if (state == 0) {
    int major = 0, minor = 0;
    const bool read = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
                      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess;
    state = read && major == 9 && minor == 0 ? 1 : 2;
    known[static_cast<std::size_t>(device)].store(state, std::memory_order_relaxed);
  }
  return state == 1;
}

}  // namespace il::ops
