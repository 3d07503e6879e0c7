#include "backends/cuda/energy_meter.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

namespace il::cuda {
namespace {

// The few NVML entry points used, by their C signatures (nvml.h is not needed to build):
// every call returns nvmlReturn_t, 0 on success; a device is an opaque pointer.
using InitFn = int (*)();
using HandleByBusIdFn = int (*)(const char*, void**);

template <typename Fn>
Fn symbol(void* library, const char* name) {
  return reinterpret_cast<Fn>(dlsym(library, name));
}

}  // namespace

EnergyMeter::EnergyMeter(int index) {
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, index) != cudaSuccess) {
    cudaGetLastError();  // clear it, so a later CUDA call does not report it
    reason_ = "no PCI bus id for cuda:" + std::to_string(index);
    return;
  }
  library_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    reason_ = "libnvidia-ml.so.1 not found";
    return;
  }
  const auto init = symbol<InitFn>(library_, "nvmlInit_v2");
  const auto by_bus = symbol<HandleByBusIdFn>(library_, "nvmlDeviceGetHandleByPciBusId_v2");
  total_energy_ = symbol<int (*)(void*, unsigned long long*)>(library_, "nvmlDeviceGetTotalEnergyConsumption");
  const auto shutdown = symbol<int (*)()>(library_, "nvmlShutdown");
  if (init == nullptr || by_bus == nullptr || total_energy_ == nullptr || shutdown == nullptr) {
    reason_ = "libnvidia-ml.so.1 lacks the energy counter";
    total_energy_ = nullptr;
    return;
  }
  if (init() != 0) {
    reason_ = "nvmlInit_v2 failed";
    total_energy_ = nullptr;
    return;
  }
  shutdown_ = shutdown;
  if (by_bus(bus_id, &device_) != 0) {
    reason_ = std::string("NVML has no device at PCI bus id ") + bus_id;
    total_energy_ = nullptr;
    return;
  }
  unsigned long long mj = 0;
  if (total_energy_(device_, &mj) != 0) {
    reason_ = "this device does not count energy";
    total_energy_ = nullptr;
  }
}

EnergyMeter::~EnergyMeter() {
  if (shutdown_ != nullptr) shutdown_();
  if (library_ != nullptr) dlclose(library_);
}

std::optional<double> EnergyMeter::joules() const {
  if (total_energy_ == nullptr) return std::nullopt;
  unsigned long long mj = 0;
  if (total_energy_(device_, &mj) != 0) return std::nullopt;
  return static_cast<double>(mj) / 1000.0;
}

}  // namespace il::cuda
