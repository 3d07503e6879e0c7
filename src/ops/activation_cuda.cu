// The GEMM epilogue kernel: bias and activation over a strided row window, for the activations
// cuBLASLt does not fuse exactly (see ops/activation_cuda.cuh). Math in f32; erf-GELU on f16 /
// bf16 values through ops/gelu_erf_fast.h.

#include "ops/activation_cuda.cuh"
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/launch_cuda.cuh"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

// Block (row, chunk of kUnroll · blockDim columns): each thread loads its kUnroll values and
// biases first, then computes and stores them, so the loads of a thread overlap (y and bias
// never alias; __restrict__ lets the compiler issue them together).
constexpr int kUnroll = 4;
template <Activation A, typename T>
__global__ void bias_activation_kernel(T* __restrict__ y, std::size_t ldy, int cols, const T* __restrict__ bias) {
  pdl::wait_for_predecessor();
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
    if (c < cols) elem::store(row + c, act::activate_for<A, T>(v[u]));
  }
}

// The vector form, when rows and bias split into aligned 16-byte vectors: the rows × cols/V
// vectors flattened, each thread taking kUnroll of them a block apart, all loads first. Scalar
// 2-byte loads left this pass (bge-base's 32768 × 3072 f16 GELU) at about 2.3× the time the
// bytes need on the H200.
template <Activation A, typename T>
__global__ void bias_activation_vec_kernel(T* __restrict__ y, unsigned ldy_vecs, unsigned row_vecs, unsigned total,
                                           const T* __restrict__ bias) {
  pdl::wait_for_predecessor();
  constexpr int V = elem::kVec<T>;
  float v[kUnroll][V];
  unsigned at[kUnroll];
  const unsigned first = blockIdx.x * blockDim.x * kUnroll + threadIdx.x;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const unsigned i = first + u * blockDim.x;
    const unsigned r = i / row_vecs, c = i - r * row_vecs;
    at[u] = r * ldy_vecs + c;
    if (i < total) elem::load_vec(y + static_cast<std::size_t>(at[u]) * V, v[u]);
    if (bias && i < total) {
      float b[V];
      elem::load_vec(bias + static_cast<std::size_t>(c) * V, b);
#pragma unroll
      for (int e = 0; e < V; ++e) v[u][e] += b[e];
    }
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    if (first + u * blockDim.x >= total) continue;
#pragma unroll
    for (int e = 0; e < V; ++e) v[u][e] = act::activate_for<A, T>(v[u][e]);
    elem::store_vec(y + static_cast<std::size_t>(at[u]) * V, v[u]);
  }
}

// Dense rows without a bias (the usual case: cuBLASLt's epilogue added it): the buffer is one
// flat run of vectors, so no thread divides its index into a row and a column.
template <Activation A, typename T>
__global__ void activation_flat_kernel(T* __restrict__ y, std::size_t total) {
  pdl::wait_for_predecessor();
  constexpr int V = elem::kVec<T>;
  float v[kUnroll][V];
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x * kUnroll + threadIdx.x;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const std::size_t i = first + static_cast<std::size_t>(u) * blockDim.x;
    if (i < total) elem::load_vec(y + i * V, v[u]);
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const std::size_t i = first + static_cast<std::size_t>(u) * blockDim.x;
    if (i >= total) continue;
#pragma unroll
    for (int e = 0; e < V; ++e) v[u][e] = act::activate_for<A, T>(v[u][e]);
    elem::store_vec(y + i * V, v[u]);
  }
}

template <Activation A, typename T>
void launch(T* y, std::size_t ldy, std::size_t rows, std::size_t cols, const T* bias, cudaStream_t stream) {
  constexpr unsigned kThreads = 128;
  constexpr std::size_t V = elem::kVec<T>;
  const std::size_t total = rows * (cols / V);
  const std::size_t flat_blocks = (total + kThreads * kUnroll - 1) / (kThreads * kUnroll);
  if (!bias && ldy == cols && elem::vectorizable<T>(y, ldy, cols) && flat_blocks < (std::size_t{1} << 31)) {
    const auto blocks = static_cast<unsigned>(flat_blocks);
    pdl::launch(activation_flat_kernel<A, T>, blocks, kThreads, 0, stream, y, total);
    return;
  }
  if (elem::vectorizable<T>(y, ldy, cols) && (!bias || elem::vectorizable<T>(bias, 0, cols)) &&
      rows * (ldy / V) < (std::size_t{1} << 32) - kThreads * kUnroll) {
    const auto blocks = static_cast<unsigned>((total + kThreads * kUnroll - 1) / (kThreads * kUnroll));
    pdl::launch(bias_activation_vec_kernel<A, T>, blocks, kThreads, 0, stream, y, static_cast<unsigned>(ldy / V),
                static_cast<unsigned>(cols / V), static_cast<unsigned>(total), bias);
    return;
  }
  const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>((cols + kThreads * kUnroll - 1) / (kThreads * kUnroll)));
  pdl::launch(bias_activation_kernel<A, T>, grid, kThreads, 0, stream, y, ldy, static_cast<int>(cols), bias);
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
