// LayerNorm / RMSNorm with fused residual, mean then centred variance (two passes, as the CPU
// op), in f32. Two kernels:
// - warp per row, for rows that split into aligned 16-byte vectors and fit in registers (up to
//   kWarpMaxChunks vectors per lane: 2048 f16 / bf16 or 1024 f32 columns): each lane loads its
//   vectors of x and residual at once, so a warp has all its row's loads in flight, and the
//   reductions are shuffles only. A warp-per-row kernel with one 2-byte load per element
//   measured slower than the block kernel on the H200 (0.146 vs 0.12 ms per call, bge-base
//   128×256 f16): the vector loads are what makes this one pay.
// - block per row otherwise: the row staged in shared memory.
// Each row is read completely before any of it is written, so out may alias x or residual.
// sum_out (x + residual, rounded to the element type) is written by the thread that read those
// columns, as it reads them, so it may alias x or residual too (a pre-norm model keeps its
// residual stream in place: sum_out == residual). With a group, every run of `group` columns is
// a row of its own to both kernels (per-head q / k norms), normalised with the same weights.
// sum_scale multiplies the sum (x + residual, or x alone) in f32 before anything else reads it
// (Gemma-4's layer scalar): sum_out stores, and the norm normalises, the scaled sum, as the CPU
// op does; the product is written with explicit rounding so no fused multiply-add differs.
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/launch_cuda.cuh"
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
  T* sum_out;  // null: none
  std::size_t lds;
  int cols;    // of a normalised run: the group, or the whole row
  int groups;  // runs per row (1 without a group)
  float eps;
  bool rms;
  float sum_scale;  // 1: none
};

// The offset of run `vr` (row vr / groups, run vr % groups) in a buffer of row stride ld.
template <typename T>
__device__ __forceinline__ std::size_t run_offset(const NormParams<T>& p, std::size_t vr, std::size_t ld) {
  if (p.groups == 1) return vr * ld;
  const std::size_t r = vr / static_cast<unsigned>(p.groups), g = vr - r * static_cast<unsigned>(p.groups);
  return r * ld + g * static_cast<std::size_t>(p.cols);
}

template <typename T>
__global__ void layernorm_kernel(NormParams<T> p) {
  pdl::wait_for_predecessor();
  extern __shared__ float row[];
  __shared__ float scratch[kThreads / 32];
  const std::size_t r = blockIdx.x;
  const T* x = p.x + run_offset(p, r, p.ldx);
  const T* res = p.residual ? p.residual + run_offset(p, r, p.ldr) : nullptr;
  T* sum_out = p.sum_out ? p.sum_out + run_offset(p, r, p.lds) : nullptr;
  float sum = 0.0f;
  for (int j = threadIdx.x; j < p.cols; j += blockDim.x) {
    float v = res ? elem::load(x + j) + elem::load(res + j) : elem::load(x + j);
    if (p.sum_scale != 1.0f) v = __fmul_rn(v, p.sum_scale);
    if (sum_out) elem::store(sum_out + j, v);
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
  T* out = p.out + run_offset(p, r, p.ldo);
  for (int j = threadIdx.x; j < p.cols; j += blockDim.x) {
    const float y = (row[j] - mean) * inv * p.w[j];
    elem::store(out + j, p.b ? y + p.b[j] : y);
  }
}

constexpr int kWarpRowsPerBlock = 4;
constexpr int kWarpMaxChunks = 8;

// One warp per row; chunk c of lane l holds columns [(32c + l)·V, +V) (V = kVec<T>), present
// when below cols (a multiple of V). kChunks ≥ the row's chunk count.
// The f32 weight and bias are 16-byte aligned at col (device allocations, col % 4 == 0).
template <int V>
__device__ __forceinline__ void load_affine(const float* w, const float* b, int col, float (&wv)[V], float (&bv)[V]) {
#pragma unroll
  for (int i = 0; i < V; i += 4) {
    const float4 a = *reinterpret_cast<const float4*>(w + col + i);
    const float4 c = b ? *reinterpret_cast<const float4*>(b + col + i) : make_float4(0.f, 0.f, 0.f, 0.f);
    wv[i] = a.x, wv[i + 1] = a.y, wv[i + 2] = a.z, wv[i + 3] = a.w;
    bv[i] = c.x, bv[i + 1] = c.y, bv[i + 2] = c.z, bv[i + 3] = c.w;
  }
}

// One warp per row; chunk c of lane l holds columns [(32c + l)·V, +V) (V = kVec<T>), present
// when below cols (a multiple of V). kChunks ≥ the row's chunk count. With kEarly (rows of up to
// 4 chunks, 1024 f16 / bf16 columns, in batches of few rows) the norm's weight and bias are
// loaded before waiting for the predecessor (they are constants of the plan: under programmatic
// dependent launch that latency overlaps the previous kernel). That holds 2 · kChunks · V more
// registers a thread: on many rows it costs more than it hides (bge-base 128×256 f16: 94
// registers, 28 % occupancy, 58 % of DRAM bandwidth, Nsight Compute), so large batches load them
// after the wait, from cache.
template <typename T, int kChunks, bool kEarly>
__global__ void layernorm_warp_kernel(NormParams<T> p, unsigned rows) {
  constexpr int V = elem::kVec<T>;
  static_assert(!kEarly || kChunks <= 4, "early weights only for short rows");
  const unsigned r = blockIdx.x * kWarpRowsPerBlock + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  float w_early[kEarly ? kChunks : 1][V], b_early[kEarly ? kChunks : 1][V];
  if constexpr (kEarly) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int col = (c * 32 + lane) * V;
      if (r < rows && col < p.cols) load_affine<V>(p.w, p.b, col, w_early[c], b_early[c]);
    }
  }
  pdl::wait_for_predecessor();
  if (r >= rows) return;
  const T* x = p.x + run_offset(p, r, p.ldx);
  const T* res = p.residual ? p.residual + run_offset(p, r, p.ldr) : nullptr;
  float v[kChunks][V];
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int col = (c * 32 + lane) * V;
    if (col < p.cols) elem::load_vec(x + col, v[c]);
  }
  if (res) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int col = (c * 32 + lane) * V;
      if (col < p.cols) {
        float add[V];
        elem::load_vec(res + col, add);
#pragma unroll
        for (int i = 0; i < V; ++i) v[c][i] += add[i];
        if (p.sum_scale != 1.0f)
#pragma unroll
          for (int i = 0; i < V; ++i) v[c][i] = __fmul_rn(v[c][i], p.sum_scale);
        if (p.sum_out) elem::store_vec(p.sum_out + run_offset(p, r, p.lds) + col, v[c]);
      }
    }
  }
  if (!res && p.sum_scale != 1.0f) {  // x alone, scaled
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      if ((c * 32 + lane) * V < p.cols)
#pragma unroll
        for (int i = 0; i < V; ++i) v[c][i] = __fmul_rn(v[c][i], p.sum_scale);
  }
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
    if ((c * 32 + lane) * V < p.cols)
#pragma unroll
      for (int i = 0; i < V; ++i) sum += v[c][i];
  sum = cuda_reduce::warp_sum(sum);
  const float mean = p.rms ? 0.0f : sum / static_cast<float>(p.cols);
  float sq = 0.0f;
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
    if ((c * 32 + lane) * V < p.cols)
#pragma unroll
      for (int i = 0; i < V; ++i) sq += (v[c][i] - mean) * (v[c][i] - mean);
  sq = cuda_reduce::warp_sum(sq);
  const float inv = 1.0f / sqrtf(sq / static_cast<float>(p.cols) + p.eps);
  T* out = p.out + run_offset(p, r, p.ldo);
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int col = (c * 32 + lane) * V;
    if (col >= p.cols) continue;
    float w[V], b[V];
    if constexpr (kEarly) {
#pragma unroll
      for (int i = 0; i < V; ++i) w[i] = w_early[c][i], b[i] = b_early[c][i];
    } else {
      load_affine<V>(p.w, p.b, col, w, b);
    }
    float y[V];
#pragma unroll
    for (int i = 0; i < V; ++i) y[i] = (v[c][i] - mean) * inv * w[i] + b[i];
    elem::store_vec(out + col, y);
  }
}

// Rows from which the weight and bias are loaded after the wait (see layernorm_warp_kernel).
constexpr std::size_t kLateAffineRows = 2048;

template <typename T, int kChunks>
void launch_warp(const NormParams<T>& p, std::size_t rows, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>((rows + kWarpRowsPerBlock - 1) / kWarpRowsPerBlock);
  if constexpr (kChunks <= 4) {
    if (rows < kLateAffineRows)
      return pdl::launch(layernorm_warp_kernel<T, kChunks, true>, blocks, kWarpRowsPerBlock * 32, 0, stream, p,
                         static_cast<unsigned>(rows));
  }
  pdl::launch(layernorm_warp_kernel<T, kChunks, false>, blocks, kWarpRowsPerBlock * 32, 0, stream, p,
              static_cast<unsigned>(rows));
}

// The warp kernel takes rows whose every operand is vector-aligned and whose run fits in
// kWarpMaxChunks vectors a lane. A run starts at a multiple of `group` columns into its row, so a
// vectorisable run width keeps every run aligned.
template <typename T>
bool warp_ok(const LayerNormArgs& a) {
  constexpr std::size_t V = elem::kVec<T>;
  const std::size_t n = a.group ? a.group : a.cols;
  const bool aligned = elem::vectorizable<T>(a.x.data, a.x.ld, n) && elem::vectorizable<T>(a.out.data, a.out.ld, n) &&
                       (!a.residual.data || elem::vectorizable<T>(a.residual.data, a.residual.ld, n)) &&
                       (!a.sum_out.data || elem::vectorizable<T>(a.sum_out.data, a.sum_out.ld, n)) &&
                       elem::vectorizable<float>(a.w, 0, n) && (!a.b || elem::vectorizable<float>(a.b, 0, n));
  const std::size_t chunks = (n / V + 31) / 32;
  return aligned && chunks <= kWarpMaxChunks;
}

// `runs`: rows × groups.
template <typename T>
void launch_warp_kernel(const NormParams<T>& p, std::size_t runs, cudaStream_t stream) {
  constexpr std::size_t V = elem::kVec<T>;
  const std::size_t chunks = (static_cast<std::size_t>(p.cols) / V + 31) / 32;
  switch (chunks) {
    case 1: return launch_warp<T, 1>(p, runs, stream);
    case 2: return launch_warp<T, 2>(p, runs, stream);
    case 3: return launch_warp<T, 3>(p, runs, stream);
    case 4: return launch_warp<T, 4>(p, runs, stream);
    case 5:
    case 6: return launch_warp<T, 6>(p, runs, stream);
    default: return launch_warp<T, kWarpMaxChunks>(p, runs, stream);
  }
}

}  // namespace

const char* layernorm_kernel_name(LayerNormKernel k) {
  switch (k) {
    case LayerNormKernel::kWarp: return "warp";
    case LayerNormKernel::kBlock: return "block";
  }
  return "?";
}

bool layernorm_kernel_supports(LayerNormKernel k, const LayerNormArgs& a) {
  switch (k) {
    case LayerNormKernel::kWarp: {
      bool ok = false;
      elem::dispatch(a.x.dtype, [&](auto tag) { ok = warp_ok<decltype(tag)>(a); });
      return ok;
    }
    case LayerNormKernel::kBlock: return true;
  }
  return false;
}

LayerNormKernel choose_layernorm_kernel(const LayerNormArgs& a) {
  return layernorm_kernel_supports(LayerNormKernel::kWarp, a) ? LayerNormKernel::kWarp : LayerNormKernel::kBlock;
}

void layernorm_launch_cuda(LayerNormKernel k, const LayerNormArgs& a, cudaStream_t stream) {
  check_layernorm(a, "layernorm (CUDA)");
  check(a.cols <= kLayerNormMaxCols, "layernorm: ", a.cols, " columns outside 1..", kLayerNormMaxCols, " (CUDA)");
  check(a.x.ld >= a.cols && a.out.ld >= a.cols && (!a.residual.data || a.residual.ld >= a.cols) &&
            (!a.sum_out.data || a.sum_out.ld >= a.cols),
        "layernorm: row stride smaller than the row");
  check(layernorm_kernel_supports(k, a), "layernorm (CUDA): the ", layernorm_kernel_name(k),
        " kernel does not support this layout");
  if (a.rows == 0) return;
  const std::size_t group = a.group ? a.group : a.cols, groups = a.cols / group, runs = a.rows * groups;
  check(runs < (1u << 31), "layernorm: too many rows for one launch");
  elem::dispatch(a.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const NormParams<T> p{static_cast<const T*>(a.x.data),
                          a.x.ld,
                          static_cast<const T*>(a.residual.data),
                          a.residual.ld,
                          a.w,
                          a.b,
                          static_cast<T*>(a.out.data),
                          a.out.ld,
                          static_cast<T*>(a.sum_out.data),
                          a.sum_out.ld,
                          static_cast<int>(group),
                          static_cast<int>(groups),
                          a.eps,
                          a.rms,
                          a.sum_scale};
    switch (k) {
      case LayerNormKernel::kWarp: return launch_warp_kernel(p, runs, stream);
      case LayerNormKernel::kBlock:
        return pdl::launch(layernorm_kernel<T>, static_cast<unsigned>(runs), kThreads, group * sizeof(float), stream,
                           p);
    }
  });
}

void layernorm_cuda(const LayerNormArgs& a, cudaStream_t stream) {
  check_layernorm(a, "layernorm (CUDA)");
  layernorm_launch_cuda(choose_layernorm_kernel(a), a, stream);
}

}  // namespace il::ops
