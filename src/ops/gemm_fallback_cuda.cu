// A plain shared-memory tiled GEMM, y = x · Wᵀ (or x · W for a transposed [k, n] weight) (f32 accumulation; bias and activation in the
// epilogue pass after it), for the shapes cuBLASLt finds no algorithm for (e.g. windows of buffers at odd column offsets, with 4-byte
// alignment only). Correct first: the plan's hot shapes go to cuBLASLt.
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/gemm_cuda.h"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

constexpr int kTile = 16;

template <typename T>
__global__ void gemm_tiled_kernel(const T* x, std::size_t ldx, const T* w, std::size_t n, std::size_t k, T* y,
                                  std::size_t ldy, std::size_t m, bool transpose_w) {
  __shared__ float xs[kTile][kTile + 1];
  __shared__ float ws[kTile][kTile + 1];  // ws[c][kk] = W[col0 + c, k0 + kk]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::size_t row = blockIdx.y * static_cast<std::size_t>(kTile) + ty;
  const std::size_t col0 = blockIdx.x * static_cast<std::size_t>(kTile);
  float acc = 0.0f;
  for (std::size_t k0 = 0; k0 < k; k0 += kTile) {
    const std::size_t kk = k0 + tx;
    xs[ty][tx] = row < m && kk < k ? elem::load(x + row * ldx + kk) : 0.0f;
    const std::size_t c = col0 + ty;  // W[c, kk]: [n, k] row-major, or [k, n] when transposed
    ws[ty][tx] = c < n && kk < k ? elem::load(transpose_w ? w + kk * n + c : w + c * k + kk) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kTile; ++j) acc = fmaf(xs[ty][j], ws[tx][j], acc);
    __syncthreads();
  }
  if (row < m && col0 + tx < n) elem::store(y + row * ldy + col0 + tx, acc);
}

}  // namespace

void gemm_fallback_cuda(const GemmCudaArgs& a, cudaStream_t stream) {
  check_gemm_cuda(a, "gemm (CUDA fallback)");
  if (a.m == 0) return;
  check((a.m + kTile - 1) / kTile <= 65535, "gemm (CUDA fallback): too many rows for one launch");
  const dim3 grid(static_cast<unsigned>((a.n + kTile - 1) / kTile), static_cast<unsigned>((a.m + kTile - 1) / kTile));
  elem::dispatch(a.type(), [&](auto tag) {
    using T = decltype(tag);
    gemm_tiled_kernel<T><<<grid, dim3(kTile, kTile), 0, stream>>>(static_cast<const T*>(a.x.data), a.x.ld,
                                                                 static_cast<const T*>(a.w.data), a.n, a.k,
                                                                 static_cast<T*>(a.y.data), a.y.ld, a.m,
                                                                 a.transpose_w);
  });
  IL_CUDA_CHECK_LAUNCH();
  bias_activation_cuda({a.y, a.bias, a.m, a.n, a.act}, stream);
}

}  // namespace il::ops
