// LayerNorm / RMSNorm with fused residual, mean then centred variance (two passes, as the CPU
// op), in f32. Rows up to 1024 columns (every encoder's hidden size we serve): one warp per row,
// the row (x + residual) held in registers, reductions by warp shuffles only, four rows per
// block. Wider rows: one block per row, the row staged in shared memory. Either way every read
// of a row happens before the first reduction step, so out may alias x or residual.
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
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

// kPer columns per lane: the row is x[lane + 32·i], i < kPer (coalesced across the warp).
constexpr int kWarpRows = 4;
template <typename T, int kPer>
__global__ void __launch_bounds__(kWarpRows * 32) layernorm_warp_kernel(NormParams<T> p, std::size_t rows) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::size_t r = blockIdx.x * static_cast<std::size_t>(kWarpRows) + threadIdx.x / 32;
  if (r >= rows) return;  // warp-uniform
  const T* x = p.x + r * p.ldx;
  const T* res = p.residual ? p.residual + r * p.ldr : nullptr;
  float v[kPer];
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int j = lane + 32 * i;
    float val = 0.0f;
    if (j < p.cols) val = res ? elem::load(x + j) + elem::load(res + j) : elem::load(x + j);
    v[i] = val;
    sum += val;
  }
  sum = cuda_reduce::warp_sum(sum);
  const float mean = p.rms ? 0.0f : sum / static_cast<float>(p.cols);
  float sq = 0.0f;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int j = lane + 32 * i;
    const float d = j < p.cols ? v[i] - mean : 0.0f;
    sq += d * d;
  }
  sq = cuda_reduce::warp_sum(sq);
  const float inv = 1.0f / sqrtf(sq / static_cast<float>(p.cols) + p.eps);
  T* out = p.out + r * p.ldo;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int j = lane + 32 * i;
    if (j >= p.cols) continue;
    const float y = (v[i] - mean) * inv * p.w[j];
    elem::store(out + j, p.b ? y + p.b[j] : y);
  }
}

template <typename T, int kPer>
void launch_warp(const NormParams<T>& p, std::size_t rows, cudaStream_t stream) {
  const std::size_t blocks = (rows + kWarpRows - 1) / kWarpRows;
  layernorm_warp_kernel<T, kPer><<<static_cast<unsigned>(blocks), kWarpRows * 32, 0, stream>>>(p, rows);
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
    if (a.cols <= 128) return launch_warp<T, 4>(p, a.rows, stream);
    if (a.cols <= 256) return launch_warp<T, 8>(p, a.rows, stream);
    if (a.cols <= 384) return launch_warp<T, 12>(p, a.rows, stream);
    if (a.cols <= 512) return launch_warp<T, 16>(p, a.rows, stream);
    if (a.cols <= 768) return launch_warp<T, 24>(p, a.rows, stream);
    if (a.cols <= 1024) return launch_warp<T, 32>(p, a.rows, stream);
    layernorm_kernel<T><<<static_cast<unsigned>(a.rows), kThreads, a.cols * sizeof(float), stream>>>(p);
  });
  IL_CUDA_CHECK_LAUNCH();
}

}  // namespace il::ops
