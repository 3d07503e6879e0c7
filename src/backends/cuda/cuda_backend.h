// The CUDA backend as the runtime sees it, in every build: device discovery and an executor
// factory. Without the CUDA backend (IL_CUDA=OFF) the same functions exist and report no device,
// so callers need no build flags and no CUDA headers.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "plan/executor.h"

namespace il::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  std::size_t memory_bytes = 0;
  int major = 0, minor = 0;  // compute capability
};

// Whether this build holds the CUDA backend.
bool built();
// Usable devices now: 0 without the backend, without a driver or without a GPU (never throws).
int device_count();
DeviceInfo device_info(int index);
// "cuda:N (NVIDIA H200, sm_90, 140 GiB)", for the one-line notices.
std::string describe(int index);

// An executor on device `index` for `plan` (which must outlive it); weights are uploaded now and
// their host copies released. `dtype`: "f32", "f16", "bf16" or "auto" (the backend's default).
// Throws il::Error without the backend or the device, or for a precision it cannot run.
std::unique_ptr<plan::Executor> make_executor(plan::Plan& plan, std::size_t max_tokens, int index,
                                              const std::string& dtype = "auto");

}  // namespace il::cuda
