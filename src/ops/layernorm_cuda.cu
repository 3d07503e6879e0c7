// LayerNorm / RMSNorm with fused residual, mean then centred variance (two passes, as the CPU
// op), in f32. Two kernels:
// - warp per row (ops/layernorm_row_cuda.cuh), for rows that split into aligned 16-byte vectors
//   and fit in registers (2048 f16 / bf16 or 1024 f32 columns): each lane loads its
//   vectors of x and residual at once, so a warp has all its row's loads in flight, and the
//   reductions are shuffles only. A warp-per-row kernel with one 2-byte load per element
//   measured slower than the block kernel on the H200 (0.146 vs 0.12 ms per call, bge-base
//   128×256 f16): the vector loads are what makes this one pay.
// - block per row otherwise: the row staged in shared memory.
// Each row is read completely before any of it is written, so out may alias x or residual.
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/launch_cuda.cuh"
#include "ops/layernorm_row_cuda.cuh"
#include "ops/ops_cuda.h"
#include "ops/reduce_cuda.cuh"

namespace il::ops {
namespace {

constexpr int kThreads = 256;

template <typename T>
struct NormParams {
  const T* x;
  std::size_t ldx;
  const T* residual;
  std::size_t ldr;
  const float* w;
  const float* b;
  T* out;
  std::size_t ldo;
  int cols;
  float eps;
  bool rms;
};

template <typename T>
__global__ void layernorm_kernel(NormParams<T> p) {
  pdl::wait_for_predecessor();
  extern __shared__ float row[];
  __shared__ float scratch[kThreads / 32];
  const std::size_t r = blockIdx.x;
  const T* x = p.x + r * p.ldx;
  const T* res = p.residual ? p.residual + r * p.ldr : nullptr;
  float sum = 0.0f;
  for (int j = threadIdx.x; j < p.cols; j += blockDim.x) {
    const float v = res ? elem::load(x + j) + elem::load(res + j) : elem::load(x + j);
    row[j] = v;
    sum += v;
  }
  sum = cuda_reduce::block_sum(sum, scratch);
  const float mean = p.rms ? 0.0f : sum / static_cast<float>(p.cols);
  float sq = 0.0f;
  for (int j = threadIdx.x; j < p.cols; j += blockDim.x) {
    const float d = row[j] - mean;
    sq += d * d;
  }
  sq = cuda_reduce::block_sum(sq, scratch);
  // 1 / sqrt rather than rsqrtf: rsqrtf's 2-ulp error is avoidable here at no measurable cost.
  const float inv = 1.0f / sqrtf(sq / static_cast<float>(p.cols) + p.eps);
  T* out = p.out + r * p.ldo;
  for (int j = threadIdx.x; j < p.cols; j += blockDim.x) {
    const float y = (row[j] - mean) * inv * p.w[j];
    elem::store(out + j, p.b ? y + p.b[j] : y);
  }
}

constexpr int kWarpRowsPerBlock = 4;

// One warp per row (ops/layernorm_row_cuda.cuh).
template <typename T, int kChunks>
__global__ void layernorm_warp_kernel(norm::RowParams<T> p, unsigned rows) {
  pdl::wait_for_predecessor();
  const unsigned r = blockIdx.x * kWarpRowsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;
  norm::warp_row<T, kChunks>(p, r, static_cast<int>(threadIdx.x % 32));
}

template <typename T, int kChunks>
void launch_warp(const norm::RowParams<T>& p, std::size_t rows, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>((rows + kWarpRowsPerBlock - 1) / kWarpRowsPerBlock);
  pdl::launch(layernorm_warp_kernel<T, kChunks>, blocks, kWarpRowsPerBlock * 32, 0, stream, p,
              static_cast<unsigned>(rows));
}

// True when the warp kernel ran (the row fits and every operand is vector-aligned).
template <typename T>
bool try_warp_kernel(const LayerNormArgs& a, cudaStream_t stream) {
  if (!norm::warp_row_fits<T>(a.x, a.ldx, a.residual, a.ldr, a.w, a.b, a.out, a.ldo, a.cols)) return false;
  const norm::RowParams<T> p{reinterpret_cast<const T*>(a.x), a.ldx, reinterpret_cast<const T*>(a.residual), a.ldr,
                             a.w, a.b, reinterpret_cast<T*>(a.out), a.ldo, static_cast<int>(a.cols), a.eps, a.rms};
  switch ((a.cols / elem::kVec<T> + 31) / 32) {
    case 1: launch_warp<T, 1>(p, a.rows, stream); break;
    case 2: launch_warp<T, 2>(p, a.rows, stream); break;
    case 3: launch_warp<T, 3>(p, a.rows, stream); break;
    case 4: launch_warp<T, 4>(p, a.rows, stream); break;
    case 5:
    case 6: launch_warp<T, 6>(p, a.rows, stream); break;
    default: launch_warp<T, norm::kWarpMaxChunks>(p, a.rows, stream); break;
  }
  return true;
}

}  // namespace

void layernorm_cuda(const LayerNormArgs& a, cudaStream_t stream, DType type) {
  check(a.x && a.w && a.out, "layernorm: null operand");
  check(a.cols > 0 && a.cols <= kLayerNormMaxCols, "layernorm: ", a.cols, " columns outside 1..",
        kLayerNormMaxCols, " (CUDA)");
  check(a.ldx >= a.cols && a.ldo >= a.cols && (!a.residual || a.ldr >= a.cols),
        "layernorm: row stride smaller than the row");
  if (a.rows == 0) return;
  check(a.rows < (1u << 31), "layernorm: too many rows for one launch");
  elem::dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    const NormParams<T> p{reinterpret_cast<const T*>(a.x), a.ldx, reinterpret_cast<const T*>(a.residual), a.ldr,
                          a.w, a.b, reinterpret_cast<T*>(a.out), a.ldo, static_cast<int>(a.cols), a.eps, a.rms};
    if (try_warp_kernel<T>(a, stream)) return;
    pdl::launch(layernorm_kernel<T>, static_cast<unsigned>(a.rows), kThreads, a.cols * sizeof(float), stream, p);
  });
}

}  // namespace il::ops
