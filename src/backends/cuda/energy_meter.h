// The GPU's cumulative energy counter, read through NVML (the driver's management library),
// for `inferencelayer bench`: on a large batch the H200 runs at its power limit, where the
// clock falls until the power fits and the energy a forward takes sets the pace
// (docs/perf-history.md, eighth session).
//
// NVML is loaded with dlopen on first use, so neither the build nor a machine without the
// driver needs it; a device whose driver does not count energy (older than Volta) reads as
// unavailable too.
#pragma once

#include <optional>
#include <string>

namespace il::cuda {

class EnergyMeter {
 public:
  // For CUDA device `index` (matched to NVML's device by PCI bus id, so CUDA_VISIBLE_DEVICES and
  // device ordering cannot mix them up).
  explicit EnergyMeter(int index);
  ~EnergyMeter();
  EnergyMeter(const EnergyMeter&) = delete;
  EnergyMeter& operator=(const EnergyMeter&) = delete;

  // Joules since the driver loaded, or nothing where the counter cannot be read.
  std::optional<double> joules() const;
  // Why joules() has nothing ("" when it reads).
  const std::string& unavailable_reason() const { return reason_; }

 private:
  void* library_ = nullptr;  // dlopen handle
  void* device_ = nullptr;   // nvmlDevice_t
  int (*total_energy_)(void*, unsigned long long*) = nullptr;
  int (*shutdown_)() = nullptr;
  std::string reason_;
};

}  // namespace il::cuda
