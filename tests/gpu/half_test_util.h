// Helpers for the f16 / bf16 op parity tests: half copies of host data made on the device (by
// ops::convert_cuda, round to nearest even), the f32 values they hold (so the CPU reference sees
// exactly the kernel's inputs and the comparison measures the kernel alone), and half results
// brought back as f32.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "gpu_test_util.h"
#include "ops/ops_cuda.h"
#include "ops/tensor_view.h"

namespace il::test {

// The unit roundoff of a storage type: half the distance from 1 to the next representable value.
inline double unit_roundoff(DType t) {
  switch (t) {
    case DType::kF32: return 0x1p-24;
    case DType::kF16: return 0x1p-11;
    case DType::kBF16: return 0x1p-8;
  }
  return 0.0;
}

inline std::string type_name(DType t) { return std::string(dtype_name(t)); }

inline std::vector<float> to_f32(const std::vector<uint16_t>& h, DType t) {
  std::vector<float> out(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) out[i] = t == DType::kF16 ? f16_to_f32(h[i]) : bf16_to_f32(h[i]);
  return out;
}

// A device array of `t` elements holding host f32 values rounded once; rounded() is what it holds.
class HalfArray {
 public:
  HalfArray(const std::vector<float>& host, DType t) : type_(t), data_(std::vector<uint16_t>(host.size(), 0)) {
    DeviceArray<float> src(host);
    ops::convert_cuda({ops::f32_view(src.get()), {data_.get(), t, 0}, host.size()}, nullptr);
    rounded_ = to_f32(data_.download(), t);
  }
  uint16_t* get() const { return data_.get(); }
  // The array from element `offset` on, as an operand with row stride ld.
  ops::TensorView view(std::size_t offset = 0, std::size_t ld = 0) const { return {data_.get() + offset, type_, ld}; }
  const std::vector<float>& rounded() const { return rounded_; }
  std::vector<float> download() const { return to_f32(data_.download(), type_); }

 private:
  DType type_;
  DeviceArray<uint16_t> data_;
  std::vector<float> rounded_;
};

// A device array of `t` elements (f32, f16 or bf16) holding host values rounded once to t;
// values() is what it holds, what a CPU reference should be given.
class TypedArray {
 public:
  TypedArray(const std::vector<float>& host, DType t) {
    if (t == DType::kF32) {
      f32_ = std::make_unique<DeviceArray<float>>(host);
      values_ = host;
    } else {
      half_ = std::make_unique<HalfArray>(host, t);
      values_ = half_->rounded();
    }
  }
  void* get() const { return f32_ ? static_cast<void*>(f32_->get()) : static_cast<void*>(half_->get()); }
  // The array from element `offset` on, as an operand with row stride ld.
  ops::TensorView view(std::size_t offset = 0, std::size_t ld = 0) const {
    return f32_ ? ops::f32_view(f32_->get() + offset, ld) : half_->view(offset, ld);
  }
  const std::vector<float>& values() const { return values_; }
  std::vector<float> download() const { return f32_ ? f32_->download() : half_->download(); }

 private:
  std::unique_ptr<DeviceArray<float>> f32_;
  std::unique_ptr<HalfArray> half_;
  std::vector<float> values_;
};

}  // namespace il::test
