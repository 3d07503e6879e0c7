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

constexpr unsigned kThreads = 128;

template <typename T>
bool kernel_ok(BiasActivationKernel k, const BiasActivationArgs& a) {
  constexpr std::size_t V = elem::kVec<T>;
  const std::size_t ldy = a.y.ld;
  switch (k) {
    case BiasActivationKernel::kFlat: {
      const std::size_t flat_blocks = (a.rows * (a.cols / V) + kThreads * kUnroll - 1) / (kThreads * kUnroll);
      return !a.bias.data && ldy == a.cols && elem::vectorizable<T>(a.y.data, ldy, a.cols) &&
             flat_blocks < (std::size_t{1} << 31);
    }
    case BiasActivationKernel::kVector:
      return elem::vectorizable<T>(a.y.data, ldy, a.cols) &&
             (!a.bias.data || elem::vectorizable<T>(a.bias.data, 0, a.cols)) &&
             a.rows * (ldy / V) < (std::size_t{1} << 32) - kThreads * kUnroll;
    case BiasActivationKernel::kElement: return true;
  }
  return false;
}

template <Activation A, typename T>
void launch(BiasActivationKernel k, const BiasActivationArgs& a, cudaStream_t stream) {
  constexpr std::size_t V = elem::kVec<T>;
  T* y = static_cast<T*>(a.y.data);
  const T* bias = static_cast<const T*>(a.bias.data);
  const std::size_t ldy = a.y.ld, rows = a.rows, cols = a.cols;
  const std::size_t total = rows * (cols / V);
  switch (k) {
    case BiasActivationKernel::kFlat: {
      const auto blocks = static_cast<unsigned>((total + kThreads * kUnroll - 1) / (kThreads * kUnroll));
      return pdl::launch(activation_flat_kernel<A, T>, blocks, kThreads, 0, stream, y, total);
    }
    case BiasActivationKernel::kVector: {
      const auto blocks = static_cast<unsigned>((total + kThreads * kUnroll - 1) / (kThreads * kUnroll));
      return pdl::launch(bias_activation_vec_kernel<A, T>, blocks, kThreads, 0, stream, y,
                         static_cast<unsigned>(ldy / V), static_cast<unsigned>(cols / V),
                         static_cast<unsigned>(total), bias);
    }
    case BiasActivationKernel::kElement: {
      const dim3 grid(static_cast<unsigned>(rows),
                      static_cast<unsigned>((cols + kThreads * kUnroll - 1) / (kThreads * kUnroll)));
      return pdl::launch(bias_activation_kernel<A, T>, grid, kThreads, 0, stream, y, ldy, static_cast<int>(cols),
                         bias);
    }
  }
}

template <typename T>
void launch_act(BiasActivationKernel k, const BiasActivationArgs& a, cudaStream_t stream) {
  switch (a.act) {
    case Activation::kNone: return launch<Activation::kNone, T>(k, a, stream);
    case Activation::kGeluErf: return launch<Activation::kGeluErf, T>(k, a, stream);
    case Activation::kGeluTanh: return launch<Activation::kGeluTanh, T>(k, a, stream);
    case Activation::kSilu: return launch<Activation::kSilu, T>(k, a, stream);
    case Activation::kRelu: return launch<Activation::kRelu, T>(k, a, stream);
    case Activation::kTanh: return launch<Activation::kTanh, T>(k, a, stream);
    case Activation::kQuickGelu: return launch<Activation::kQuickGelu, T>(k, a, stream);
  }
}

}  // namespace

const char* bias_activation_kernel_name(BiasActivationKernel k) {
  switch (k) {
    case BiasActivationKernel::kFlat: return "flat";
    case BiasActivationKernel::kVector: return "vector";
    case BiasActivationKernel::kElement: return "element";
  }
  return "?";
}

bool bias_activation_kernel_supports(BiasActivationKernel k, const BiasActivationArgs& a) {
  bool ok = false;
  elem::dispatch(a.y.dtype, [&](auto tag) { ok = kernel_ok<decltype(tag)>(k, a); });
  return ok;
}

BiasActivationKernel choose_bias_activation_kernel(const BiasActivationArgs& a) {
  for (BiasActivationKernel k : {BiasActivationKernel::kFlat, BiasActivationKernel::kVector})
    if (bias_activation_kernel_supports(k, a)) return k;
  return BiasActivationKernel::kElement;
}

void bias_activation_launch_cuda(BiasActivationKernel k, const BiasActivationArgs& a, cudaStream_t stream) {
  check_bias_activation(a, "bias_activation (CUDA)");
  if (a.rows == 0 || a.cols == 0 || (a.act == Activation::kNone && a.bias.data == nullptr)) return;
  check(a.rows < (1u << 31) && a.cols < (1u << 31), "bias_activation: too large for one launch");
  check(bias_activation_kernel_supports(k, a), "bias_activation (CUDA): the ", bias_activation_kernel_name(k),
        " kernel does not support this layout");
  elem::dispatch(a.y.dtype, [&](auto tag) { launch_act<decltype(tag)>(k, a, stream); });
}

void bias_activation_cuda(const BiasActivationArgs& a, cudaStream_t stream) {
  check_bias_activation(a, "bias_activation (CUDA)");
  if (a.rows == 0 || a.cols == 0 || (a.act == Activation::kNone && a.bias.data == nullptr)) return;
  bias_activation_launch_cuda(choose_bias_activation_kernel(a), a, stream);
}

}  // namespace il::ops
