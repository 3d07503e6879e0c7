// Checks for CUDA runtime and cuBLASLt calls: a failure becomes an il::Error naming the call, the
// file and line, and the runtime's own message (never an abort). Only CUDA code includes this.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "core/error.h"

namespace il::cuda_detail {

[[noreturn]] inline void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  throw make_error("CUDA error at ", file, ":", line, " in ", call, ": ", cudaGetErrorName(e), " (",
                   cudaGetErrorString(e), ")");
}

[[noreturn]] inline void throw_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  throw make_error("cuBLASLt error at ", file, ":", line, " in ", call, ": status ",
                   static_cast<int>(s));
}

}  // namespace il::cuda_detail

#define IL_CUDA_CHECK(call)                                                        \
  do {                                                                             \
    const cudaError_t il_cuda_err_ = (call);                                       \
    if (il_cuda_err_ != cudaSuccess)                                               \
      ::il::cuda_detail::throw_cuda(il_cuda_err_, #call, __FILE__, __LINE__);      \
  } while (0)

#define IL_CUBLAS_CHECK(call)                                                      \
  do {                                                                             \
    const cublasStatus_t il_cublas_st_ = (call);                                   \
    if (il_cublas_st_ != CUBLAS_STATUS_SUCCESS)                                    \
      ::il::cuda_detail::throw_cublas(il_cublas_st_, #call, __FILE__, __LINE__);   \
  } while (0)

// After a kernel launch: reports a bad configuration (grid, shared memory) at the launch site.
#define IL_CUDA_CHECK_LAUNCH() IL_CUDA_CHECK(cudaGetLastError())
