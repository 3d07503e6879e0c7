#include <array>
#include <atomic>
#include <cstdlib>
#include <string>

#include "core/env.h"
#include "ops/launch_cuda.cuh"

namespace il::ops {
namespace {

// The current device's compute capability as 10 · major + minor, read once per device (0 where it
// cannot be read).
int current_capability() {
  static std::array<std::atomic<int>, 64> known{};  // 0: not read yet; -1: unreadable
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= static_cast<int>(known.size())) return 0;
  int cc = known[static_cast<std::size_t>(device)].load(std::memory_order_relaxed);
  if (cc == 0) {
    int major = 0, minor = 0;
    const bool read = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
                      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess;
    cc = read ? 10 * major + minor : -1;
    known[static_cast<std::size_t>(device)].store(cc, std::memory_order_relaxed);
  }
  return cc > 0 ? cc : 0;
}

}  // namespace

bool current_device_is_sm90() { return current_capability() == 90; }

namespace pdl {

bool enabled() {
  static const bool allowed = env::on_unless_zero("IL_CUDA_PDL");
  return allowed && current_capability() >= 90;
}

}  // namespace pdl
}  // namespace il::ops
