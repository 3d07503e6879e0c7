// The GEMM epilogue kernel: bias and activation over a strided row window, for the activations
// cuBLASLt does not fuse exactly (its GELU epilogue is not documented as erf or tanh, so both
// GELUs run here, matching ops/activation.h).
#include <algorithm>
#include <cmath>

#include "ops/check_cuda.h"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

__device__ __forceinline__ float gelu_erf_d(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

__device__ __forceinline__ float gelu_tanh_d(float v) {
  float a = 0.7978845608028654f * (v + 0.044715f * v * v * v);
  a = fminf(20.0f, fmaxf(-20.0f, a));  // as the CPU op: tanh is ±1 well before ±20
  return 0.5f * v * (1.0f + tanhf(a));
}

template <Activation A>
__device__ __forceinline__ float activate(float v) {
  if constexpr (A == Activation::kNone) return v;
  if constexpr (A == Activation::kGeluErf) return gelu_erf_d(v);
  if constexpr (A == Activation::kGeluTanh) return gelu_tanh_d(v);
  if constexpr (A == Activation::kSilu) return v / (1.0f + expf(-v));
  if constexpr (A == Activation::kRelu) return v > 0.0f ? v : 0.0f;
  if constexpr (A == Activation::kTanh) return tanhf(v);
  return v;
}

template <Activation A>
__global__ void bias_activation_kernel(float* y, std::size_t ldy, std::size_t rows, std::size_t cols,
                                       const float* bias) {
  const std::size_t total = rows * cols;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t r = i / cols, c = i % cols;
    float* p = y + r * ldy + c;
    const float v = bias ? *p + bias[c] : *p;
    *p = activate<A>(v);
  }
}

template <Activation A>
void launch(float* y, std::size_t ldy, std::size_t rows, std::size_t cols, const float* bias,
            cudaStream_t stream) {
  constexpr unsigned kThreads = 256;
  const std::size_t total = rows * cols;
  // A grid-stride loop: enough blocks to fill the GPU, never more than the work needs.
  const std::size_t blocks = std::min<std::size_t>((total + kThreads - 1) / kThreads, 65536);
  bias_activation_kernel<A><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(y, ldy, rows, cols, bias);
  IL_CUDA_CHECK_LAUNCH();
}

}  // namespace

void bias_activation_cuda(float* y, std::size_t ldy, std::size_t rows, std::size_t cols,
                          const float* bias, Activation act, cudaStream_t stream) {
  check(ldy >= cols, "bias_activation: row stride ", ldy, " smaller than ", cols, " columns");
  if (rows == 0 || cols == 0 || (act == Activation::kNone && bias == nullptr)) return;
  switch (act) {
    case Activation::kNone: return launch<Activation::kNone>(y, ldy, rows, cols, bias, stream);
    case Activation::kGeluErf: return launch<Activation::kGeluErf>(y, ldy, rows, cols, bias, stream);
    case Activation::kGeluTanh: return launch<Activation::kGeluTanh>(y, ldy, rows, cols, bias, stream);
    case Activation::kSilu: return launch<Activation::kSilu>(y, ldy, rows, cols, bias, stream);
    case Activation::kRelu: return launch<Activation::kRelu>(y, ldy, rows, cols, bias, stream);
    case Activation::kTanh: return launch<Activation::kTanh>(y, ldy, rows, cols, bias, stream);
  }
}

}  // namespace il::ops
