// The CUDA backend's entry points in a build without CUDA (IL_CUDA=OFF, or AUTO without nvcc).
#include "backends/cuda/cuda_backend.h"

#include "core/error.h"

namespace il::cuda {

bool built() { return false; }
int device_count() { return 0; }

DeviceInfo device_info(int) { throw Error("this build has no CUDA backend (configure with -DIL_CUDA=ON)"); }
std::string describe(int) { throw Error("this build has no CUDA backend (configure with -DIL_CUDA=ON)"); }

std::unique_ptr<plan::Executor> make_executor(plan::Plan&, std::size_t, int, const std::string&) {
  throw Error("this build has no CUDA backend (configure with -DIL_CUDA=ON)");
}

}  // namespace il::cuda
