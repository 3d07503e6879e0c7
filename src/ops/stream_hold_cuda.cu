// A kernel that keeps its stream busy for a while: the profiler launches it before the steps it
// times, so the device starts the first step only after the host has enqueued all of them and
// each event pair then measures the step's device time rather than the host's launch cost
// (which at small batches is larger than the kernels themselves).
#include "ops/check_cuda.h"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

__global__ void hold_kernel(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

}  // namespace

void hold_stream_cuda(double microseconds, cudaStream_t stream) {
  if (microseconds <= 0.0) return;
  hold_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(microseconds * 1000.0));
  IL_CUDA_CHECK_LAUNCH();
}

}  // namespace il::ops
