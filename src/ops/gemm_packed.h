// The CPU GEMM over weights packed once at load time:
//   y[m, n] = act(x[m, k] · W[n, k]ᵀ + bias[n])
// W (Hugging Face [out, in] layout) is re-laid as panels of 32 output columns, each panel k rows
// of 32 contiguous floats, so the inner kernel streams it with aligned vector loads and never
// repacks it per call (the reason small batches beat a general BLAS, which copies B every call).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "inferencelayer/types.h"
#include "ops/tensor_view.h"

namespace il::ops {

class PackedWeight {
 public:
  PackedWeight() = default;
  // w: [n, k] row-major.
  PackedWeight(const float* w, std::size_t n, std::size_t k);

  std::size_t n() const { return n_; }
  std::size_t k() const { return k_; }
  std::size_t panels() const { return panels_; }
  // Panel p: k rows of 32 floats, columns p*32 … p*32+31 (zero past n).
  const float* panel(std::size_t p) const { return data_.get() + p * k_ * 32; }
  std::size_t bytes() const { return panels_ * k_ * 32 * sizeof(float); }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::size_t n_ = 0, k_ = 0, panels_ = 0;
  std::unique_ptr<float[], Free> data_;
};

// The panel layout itself, for any operand that feeds the tile kernels as B: rows 0 … count-1 of
// src (ld floats apart, `width` floats each) become ceil(count / 32) panels of width × 32 floats,
// row j of src as column j % 32 of panel j / 32, columns past `count` zero. PackedWeight packs
// a weight this way once; attention packs each block of keys this way per call.
void pack_panels(const float* src, std::size_t ld, std::size_t count, std::size_t width, float* dst);

// The CPU GEMM's arguments: f32 views (the weight is packed f32 by construction); the CUDA GEMM
// takes ops/gemm_cuda.h's GemmCudaArgs, with the weight as a view in the activations' type.
struct PackedGemmArgs {
  ConstTensorView x;     // [m, k]
  const PackedWeight* w = nullptr;
  ConstTensorView bias;  // [n] or absent
  TensorView y;          // [m, n]
  std::size_t m = 0;
  Activation act = Activation::kNone;
};

// Runs with the fastest kernel this CPU supports (IL_GEMM_KERNEL=avx512|avx2|generic forces one).
void gemm_packed_cpu(const PackedGemmArgs& a, ThreadPool& pool);

// For tests and benchmarks: the kernels this build and CPU can run, and a call with one of them.
std::vector<std::string> gemm_packed_kernels();
void gemm_packed_cpu(const PackedGemmArgs& a, ThreadPool& pool, const std::string& kernel);
std::string gemm_packed_default_kernel();

}  // namespace il::ops
