// The GEMM epilogue kernel: bias and activation over a strided row window, for the activations
// cuBLASLt does not fuse exactly (see ops/activation_cuda.cuh). Math in f32.

#include "ops/activation_cuda.cuh"
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

// Block (row, chunk of kUnroll · blockDim columns): each thread loads its kUnroll values and
// biases first, then computes and stores them, so the loads of a thread overlap (y and bias
// never alias; __restrict__ lets the compiler issue them together).
constexpr int kUnroll = 4;
template <Activation A, typename T>
__global__ void bias_activation_kernel(T* __restrict__ y, std::size_t ldy, int cols, const T* __restrict__ bias) {
  T* row = y + blockIdx.x * ldy;
  const int c0 = static_cast<int>(blockIdx.y * blockDim.x) * kUnroll + static_cast<int>(threadIdx.x);
  float v[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int c = c0 + u * static_cast<int>(blockDim.x);
    v[u] = c < cols ? elem::load(row + c) : 0.0f;
    if (bias && c < cols) v[u] += elem::load(bias + c);
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int c = c0 + u * static_cast<int>(blockDim.x);
    if (c < cols) elem::store(row + c, act::activate<A>(v[u]));
  }
}

template <Activation A, typename T>
void launch(T* y, std::size_t ldy, std::size_t rows, std::size_t cols, const T* bias, cudaStream_t stream) {
  constexpr unsigned kThreads = 128;
  const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>((cols + kThreads * kUnroll - 1) / (kThreads * kUnroll)));
  bias_activation_kernel<A, T><<<grid, kThreads, 0, stream>>>(y, ldy, static_cast<int>(cols), bias);
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
