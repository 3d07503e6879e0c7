// The array operands of the ops: a row-major matrix of one element type, `ld` elements from one
// row to the next, at `data` (host memory for the CPU ops, device memory for the CUDA launchers).
// Every op's argument struct holds its arrays as views, so an array's element type travels with
// its address: no float* ever carries a half array. The CPU ops compute in f32 and take f32
// views only (f32_data refuses another type, naming the op); the CUDA launchers instantiate their
// kernels for the views' type. A vector (a bias, a table row) has ld 0 or its length; an absent
// optional operand has data == nullptr.
#pragma once

#include <cstddef>

#include "core/dtype.h"
#include "core/error.h"

namespace il::ops {

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kF32;
  std::size_t ld = 0;  // row stride in elements
};

// A view an op only reads; a TensorView converts to it.
struct ConstTensorView {
  const void* data = nullptr;
  DType dtype = DType::kF32;
  std::size_t ld = 0;

  constexpr ConstTensorView() = default;
  constexpr ConstTensorView(const void* d, DType t, std::size_t l) : data(d), dtype(t), ld(l) {}
  constexpr ConstTensorView(const TensorView& v) : data(v.data), dtype(v.dtype), ld(v.ld) {}  // NOLINT: implicit
};

// Views of f32 arrays (host or device).
inline TensorView f32_view(float* p, std::size_t ld = 0) { return {p, DType::kF32, ld}; }
inline ConstTensorView f32_view(const float* p, std::size_t ld = 0) { return {p, DType::kF32, ld}; }

// The f32 array an f32 view holds (null for an absent operand). Any other element type is an
// il::Error naming `what`: the CPU ops compute in f32 only.
inline const float* f32_data(const ConstTensorView& v, const char* what) {
  check(v.data == nullptr || v.dtype == DType::kF32, what, ": a ", dtype_name(v.dtype),
        " operand, where the CPU op takes F32 only");
  return static_cast<const float*>(v.data);
}
inline float* f32_data(const TensorView& v, const char* what) {
  check(v.data == nullptr || v.dtype == DType::kF32, what, ": a ", dtype_name(v.dtype),
        " operand, where the CPU op takes F32 only");
  return static_cast<float*>(v.data);
}

}  // namespace il::ops
