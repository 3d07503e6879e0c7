// Gated linear unit (ops/glu.h) on the GPU: out[r, j] = act(x[r, j]) · x[r, n + j], loaded into f32,
// computed in f32 and rounded once on the store. Memory-bound: where x's gate and up halves and out
// split into aligned 16-byte vectors, the rows × n/V vectors are flattened and each thread moves
// whole vectors; otherwise one thread per element. A thread reads only the gate and up values of
// the columns it writes, so out may be x itself.
#include <algorithm>

#include "ops/activation_cuda.cuh"
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/launch_cuda.cuh"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

constexpr unsigned kThreads = 128;

template <Activation A, typename T>
__global__ void glu_kernel(const T* x, std::size_t ldx, T* out, std::size_t ldo, unsigned n) {
  pdl::wait_for_predecessor();
  const std::size_t r = blockIdx.y;
  const unsigned j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const T* row = x + r * ldx;
  const float gate = elem::load(row + j), up = elem::load(row + n + j);
  elem::store(out + r * ldo + j, act::activate_for<A, T>(gate) * up);
}

template <Activation A, typename T>
__global__ void glu_vec_kernel(const T* x, unsigned ldx_vecs, T* out, unsigned ldo_vecs, unsigned row_vecs,
                               std::size_t total) {
  pdl::wait_for_predecessor();
  constexpr int V = elem::kVec<T>;
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const std::size_t r = i / row_vecs, c = i - r * row_vecs;
  const T* gate_at = x + (r * ldx_vecs + c) * V;
  float gate[V], up[V], y[V];
  elem::load_vec(gate_at, gate);
  elem::load_vec(gate_at + static_cast<std::size_t>(row_vecs) * V, up);
#pragma unroll
  for (int e = 0; e < V; ++e) y[e] = act::activate_for<A, T>(gate[e]) * up[e];
  elem::store_vec(out + (r * ldo_vecs + c) * V, y);
}

// The vector kernel needs x's gate and up halves and out in aligned 16-byte vectors (the up
// half starts n columns in: aligned when n is a multiple of V) and strides that index in 32 bits.
template <typename T>
bool vector_ok(const GluArgs& a) {
  constexpr std::size_t V = elem::kVec<T>;
  return elem::vectorizable<T>(a.x.data, a.x.ld, a.n) && elem::vectorizable<T>(a.out.data, a.out.ld, a.n) &&
         a.x.ld / V < (1u << 31) && a.out.ld / V < (1u << 31);
}

template <Activation A, typename T>
void launch(GluKernel k, const GluArgs& a, cudaStream_t stream) {
  constexpr std::size_t V = elem::kVec<T>;
  const T* x = static_cast<const T*>(a.x.data);
  T* out = static_cast<T*>(a.out.data);
  const std::size_t ldx = a.x.ld, ldo = a.out.ld;
  switch (k) {
    case GluKernel::kVector: {
      const std::size_t total = a.rows * (a.n / V);
      const std::size_t blocks = (total + kThreads - 1) / kThreads;
      check(blocks < (std::size_t{1} << 31), "glu: too many rows for one launch");
      pdl::launch(glu_vec_kernel<A, T>, static_cast<unsigned>(blocks), kThreads, 0, stream, x,
                  static_cast<unsigned>(ldx / V), out, static_cast<unsigned>(ldo / V), static_cast<unsigned>(a.n / V),
                  total);
      return;
    }
    case GluKernel::kElement:
      // Rows past 65535 would not fit the grid's y: split the launch.
      for (std::size_t r0 = 0; r0 < a.rows; r0 += 65535) {
        const std::size_t rows = std::min<std::size_t>(65535, a.rows - r0);
        const dim3 grid(static_cast<unsigned>((a.n + kThreads - 1) / kThreads), static_cast<unsigned>(rows));
        pdl::launch(glu_kernel<A, T>, grid, kThreads, 0, stream, x + r0 * ldx, ldx, out + r0 * ldo, ldo,
                    static_cast<unsigned>(a.n));
      }
      return;
  }
}

template <typename T>
void launch_act(GluKernel k, const GluArgs& a, cudaStream_t stream) {
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

const char* glu_kernel_name(GluKernel k) {
  switch (k) {
    case GluKernel::kVector: return "vector";
    case GluKernel::kElement: return "element";
  }
  return "?";
}

bool glu_kernel_supports(GluKernel k, const GluArgs& a) {
  switch (k) {
    case GluKernel::kVector: {
      bool ok = false;
      elem::dispatch(a.x.dtype, [&](auto tag) { ok = vector_ok<decltype(tag)>(a); });
      return ok;
    }
    case GluKernel::kElement: return true;
  }
  return false;
}

GluKernel choose_glu_kernel(const GluArgs& a) {
  return glu_kernel_supports(GluKernel::kVector, a) ? GluKernel::kVector : GluKernel::kElement;
}

void glu_launch_cuda(GluKernel k, const GluArgs& a, cudaStream_t stream) {
  check_glu(a, "glu (CUDA)");
  check(glu_kernel_supports(k, a), "glu (CUDA): the ", glu_kernel_name(k), " kernel does not support this layout");
  if (a.rows == 0) return;
  check(a.n < (1u << 31), "glu: too many columns for one launch");
  elem::dispatch(a.x.dtype, [&](auto tag) { launch_act<decltype(tag)>(k, a, stream); });
}

void glu_cuda(const GluArgs& a, cudaStream_t stream) {
  check_glu(a, "glu (CUDA)");
  glu_launch_cuda(choose_glu_kernel(a), a, stream);
}

}  // namespace il::ops
