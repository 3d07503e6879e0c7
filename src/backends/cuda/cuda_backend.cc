// The CUDA backend's entry points: device discovery through the runtime API, the executor.
#include "backends/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <sstream>

#include "backends/cuda/cuda_executor.h"
#include "ops/check_cuda.h"

namespace il::cuda {

bool built() { return true; }

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: clear the sticky-free error, report none
    return 0;
  }
  return n;
}

DeviceInfo device_info(int index) {
  const int n = device_count();
  check(index >= 0 && index < n, "CUDA device ", index, " does not exist (", n, " device(s) found)");
  cudaDeviceProp prop{};
  IL_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  return {index, prop.name, prop.totalGlobalMem, prop.major, prop.minor};
}

std::string describe(int index) {
  const DeviceInfo d = device_info(index);
  std::ostringstream os;
  os << "cuda:" << d.index << " (" << d.name << ", sm_" << d.major << d.minor << ", "
     << (d.memory_bytes >> 30) << " GiB)";
  return os.str();
}

std::unique_ptr<plan::Executor> make_executor(plan::Plan& plan, std::size_t max_tokens, int index,
                                              const std::string& dtype) {
  device_info(index);  // validates the index with a clear message
  // "auto" is f32, the parity class, on every device: a low-precision mode is always asked for.
  DType compute = DType::kF32;
  if (dtype == "f16") {
    compute = DType::kF16;
  } else if (dtype == "bf16") {
    compute = DType::kBF16;
  } else {
    check(dtype == "auto" || dtype == "f32", "dtype '", dtype, "' is not one of auto, f32, f16, bf16");
  }
  return std::make_unique<CudaExecutor>(plan, max_tokens, index, compute);
}

}  // namespace il::cuda
