// The GEMM epilogue kernel: bias and activation over a strided row window, for the activations
// cuBLASLt does not fuse exactly. cuBLASLt's GELU epilogue is the tanh approximation, so the
// erf GELU (BERT's "gelu") always runs here; both GELUs match ops/activation.h. Math in f32.
#include <cmath>

#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
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

// One block per row (no index division per element); threads stride over the columns.
template <Activation A, typename T>
__global__ void bias_activation_kernel(T* y, std::size_t ldy, int cols, const T* bias) {
  T* row = y + blockIdx.x * ldy;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = bias ? elem::load(row + c) + elem::load(bias + c) : elem::load(row + c);
    elem::store(row + c, activate<A>(v));
  }
}

template <Activation A, typename T>
void launch(T* y, std::size_t ldy, std::size_t rows, std::size_t cols, const T* bias, cudaStream_t stream) {
  const unsigned threads = cols >= 1024 ? 256 : 128;
  bias_activation_kernel<A, T><<<static_cast<unsigned>(rows), threads, 0, stream>>>(y, ldy, static_cast<int>(cols),
                                                                                   bias);
  IL_CUDA_CHECK_LAUNCH();
}

template <typename T>
void launch_act(T* y, std::size_t ldy, std::size_t rows, std::size_t cols, const T* bias, Activation act,
                cudaStream_t stream) {
  switch (act) {
    case Activation::kNone: return launch<Activation::kNone>(y, ldy, rows, cols, bias, stream);
    case Activation::kGeluErf: return launch<Activation::kGeluErf>(y, ldy, rows, cols, bias, stream);
    case Activation::kGeluTanh: return launch<Activation::kGeluTanh>(y, ldy, rows, cols, bias, stream);
    case Activation::kSilu: return launch<Activation::kSilu>(y, ldy, rows, cols, bias, stream);
    case Activation::kRelu: return launch<Activation::kRelu>(y, ldy, rows, cols, bias, stream);
    case Activation::kTanh: return launch<Activation::kTanh>(y, ldy, rows, cols, bias, stream);
  }
}

}  // namespace

void bias_activation_cuda(void* y, std::size_t ldy, std::size_t rows, std::size_t cols, const void* bias,
                          Activation act, cudaStream_t stream, DType type) {
  check(ldy >= cols, "bias_activation: row stride ", ldy, " smaller than ", cols, " columns");
  if (rows == 0 || cols == 0 || (act == Activation::kNone && bias == nullptr)) return;
  check(rows < (1u << 31) && cols < (1u << 31), "bias_activation: too large for one launch");
  elem::dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    launch_act<T>(static_cast<T*>(y), ldy, rows, cols, static_cast<const T*>(bias), act, stream);
  });
}

}  // namespace il::ops
