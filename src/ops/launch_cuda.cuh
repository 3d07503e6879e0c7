// Programmatic dependent launch (sm_90+): the plan's kernels run one after another on one stream,
// and at small batches each is shorter than the gap a dependent launch normally leaves. Launched
// through pdl::launch, a kernel may start while its predecessor is still running; its first
// statement, pdl::wait_for_predecessor(), holds every thread until the predecessor has finished
// and its writes are visible, and then lets the next kernel start launching in turn. So the
// launch cost overlaps the previous kernel and the ordering is exactly the stream's: nothing the
// stream's earlier work writes is read, and nothing is written, before the wait. Each kernel
// launched this way calls the wait before touching activations; the only reads allowed before
// it are the plan's constants (weights, biases, norm parameters), which are complete before any
// kernel that reads them is launched (the executor uploads and synchronises at construction), so
// their latency can overlap the previous kernel (ops/gemm_skinny_cuda.cu, ops/layernorm_cuda.cu).
// IL_CUDA_PDL=0 launches normally (the wait is then a no-op); before sm_90 both are plain.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "ops/check_cuda.h"

namespace il::ops::pdl {

// Whether launches on the current device carry the programmatic-serialisation attribute.
bool enabled();

__device__ __forceinline__ void wait_for_predecessor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared_bytes, cudaStream_t stream,
            Args&&... args) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = shared_bytes;
  cfg.stream = stream;
  cfg.attrs = &attr;
  cfg.numAttrs = enabled() ? 1 : 0;
  IL_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace il::ops::pdl

namespace il::ops {

// Whether the current device has compute capability 9.0 exactly, the only one the sm_90a kernels
// (wgmma GEMM and attention) run on. Worked out once per device: on a host with mixed GPUs each
// device answers for itself.
bool current_device_is_sm90();

}  // namespace il::ops
