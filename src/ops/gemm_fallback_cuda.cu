// A plain shared-memory tiled GEMM, y = x · Wᵀ (no epilogue, f32 accumulation), for the shapes
// cuBLASLt finds no algorithm for (e.g. windows of buffers at odd column offsets, with 4-byte
// alignment only). Correct first: the plan's hot shapes go to cuBLASLt.
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

constexpr int kTile = 16;

template <typename T>
__global__ void gemm_tiled_kernel(const T* x, std::size_t ldx, const T* w, std::size_t n, std::size_t k, T* y,
                                  std::size_t ldy, std::size_t m) {
  __shared__ float xs[kTile][kTile + 1];
  __shared__ float ws[kTile][kTile + 1];  // ws[c][kk] = W[col0 + c, k0 + kk]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::size_t row = blockIdx.y * static_cast<std::size_t>(kTile) + ty;
  const std::size_t col0 = blockIdx.x * static_cast<std::size_t>(kTile);
  float acc = 0.0f;
  for (std::size_t k0 = 0; k0 < k; k0 += kTile) {
    const std::size_t kk = k0 + tx;
    xs[ty][tx] = row < m && kk < k ? elem::load(x + row * ldx + kk) : 0.0f;
    ws[ty][tx] = col0 + ty < n && kk < k ? elem::load(w + (col0 + ty) * k + kk) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kTile; ++j) acc = fmaf(xs[ty][j], ws[tx][j], acc);
    __syncthreads();
  }
  if (row < m && col0 + tx < n) elem::store(y + row * ldy + col0 + tx, acc);
}

}  // namespace

void gemm_fallback_cuda(const void* x, std::size_t ldx, const void* w, std::size_t n, std::size_t k, void* y,
                        std::size_t ldy, std::size_t m, cudaStream_t stream, DType type) {
  if (m == 0 || n == 0) return;
  check((m + kTile - 1) / kTile <= 65535, "gemm (CUDA fallback): too many rows for one launch");
  const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile), static_cast<unsigned>((m + kTile - 1) / kTile));
  elem::dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    gemm_tiled_kernel<T><<<grid, dim3(kTile, kTile), 0, stream>>>(static_cast<const T*>(x), ldx,
                                                                 static_cast<const T*>(w), n, k, static_cast<T*>(y),
                                                                 ldy, m);
  });
  IL_CUDA_CHECK_LAUNCH();
}

}  // namespace il::ops
