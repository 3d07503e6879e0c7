// DiffusionGemma's per-row sampler work (ops/canvas_sample.h) on the GPU: one block of 1,024
// threads per canvas row (the first two passes four values at a time where rows are 16-byte
// aligned), four passes over the row (a 262,144-logit row is 1 MB; a 256-row canvas
// reads about 1 GB in all, a fraction of a millisecond, where copying the logits to the host took
// hundreds):
//   1. processed = raw / T stored, the maximum and its first index;
//   2. the entropy's sums (f64 exponentials, as the CPU) and Σ expf(x − m) for the probabilities;
//   3. each warp's share of the probability mass, over a contiguous segment of the row, added in
//      32-value tiles (a warp scan each) in index order;
//   4. the warp whose segment holds u's crossing scans it again, tile by tile, from the mass
//      before it, and continues past its segment if rounding put the crossing further on.
// The sums are associated differently from the CPU's row-order sums (the header says what that
// can change).
#include <climits>
#include <cstdint>
#include <cmath>

#include "ops/canvas_sample.h"
#include "ops/check_cuda.h"
#include "ops/launch_cuda.cuh"
#include "ops/ops_cuda.h"
#include "ops/reduce_cuda.cuh"

namespace il::ops {
namespace {

constexpr int kThreads = 1024, kWarps = kThreads / 32;
constexpr unsigned kFull = cuda_reduce::kFullMask;

__device__ __forceinline__ float probability(float x, float m, double z) {
  return static_cast<float>(static_cast<double>(expf(x - m)) / z);
}

// Inclusive prefix sum of v over the warp's lanes.
__device__ __forceinline__ double warp_scan(double v, int lane) {
  for (int o = 1; o < 32; o <<= 1) {
    const double u = __shfl_up_sync(kFull, v, o);
    if (lane >= o) v += u;
  }
  return v;
}

template <bool kVec4>
__global__ void __launch_bounds__(kThreads)
    canvas_sample_kernel(const float* logits, std::size_t ldl, float* processed, std::size_t ldp, int cols,
                         const float* temperature, const double* uniform, RowDraw* out) {
  pdl::wait_for_predecessor();
  __shared__ float s_max[kWarps];
  __shared__ int s_at[kWarps], s_last[kWarps];
  __shared__ double s_z[kWarps], s_w[kWarps], s_z32[kWarps], s_mass[kWarps];
  __shared__ int s_warp;
  __shared__ double s_before;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const std::size_t r = blockIdx.x;
  const float T = temperature[r];
  const float* x = logits + r * ldl;
  float* p = processed + r * ldp;

  // 1. Divide; the maximum and its first index.
  float mv = -INFINITY;
  int mi = INT_MAX;
  if constexpr (kVec4) {  // four at a time; a thread's indices still ascend
#pragma unroll 2
    for (int i = tid; i < cols / 4; i += kThreads) {
      float4 v = reinterpret_cast<const float4*>(x)[i];
      v.x /= T, v.y /= T, v.z /= T, v.w /= T;
      reinterpret_cast<float4*>(p)[i] = v;
      if (v.x > mv) mv = v.x, mi = 4 * i;
      if (v.y > mv) mv = v.y, mi = 4 * i + 1;
      if (v.z > mv) mv = v.z, mi = 4 * i + 2;
      if (v.w > mv) mv = v.w, mi = 4 * i + 3;
    }
  } else {
    for (int j = tid; j < cols; j += kThreads) {
      const float v = x[j] / T;
      p[j] = v;
      if (v > mv) mv = v, mi = j;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(kFull, mv, o);
    const int oi = __shfl_xor_sync(kFull, mi, o);
    if (ov > mv || (ov == mv && oi < mi)) mv = ov, mi = oi;
  }
  if (lane == 0) s_max[warp] = mv, s_at[warp] = mi;
  __syncthreads();
  float m = -INFINITY;
  int argmax = INT_MAX;
  for (int w = 0; w < kWarps; ++w)
    if (s_max[w] > m || (s_max[w] == m && s_at[w] < argmax)) m = s_max[w], argmax = s_at[w];

  // 2. The entropy's sums and the probabilities' normaliser. Each thread reads back what it
  // stored itself.
  double z = 0.0, wsum = 0.0, z32 = 0.0;
  const auto add = [&](float v) {
    const double d = static_cast<double>(v) - static_cast<double>(m), e = exp(d);
    z += e;
    wsum += e * d;
    z32 += static_cast<double>(expf(v - m));
  };
  if constexpr (kVec4) {
    for (int i = tid; i < cols / 4; i += kThreads) {
      const float4 v = reinterpret_cast<const float4*>(p)[i];
      add(v.x), add(v.y), add(v.z), add(v.w);
    }
  } else {
    for (int j = tid; j < cols; j += kThreads) add(p[j]);
  }
  z = cuda_reduce::warp_sum(z);
  wsum = cuda_reduce::warp_sum(wsum);
  z32 = cuda_reduce::warp_sum(z32);
  if (lane == 0) s_z[warp] = z, s_w[warp] = wsum, s_z32[warp] = z32;
  __syncthreads();  // also: every thread's processed values are stored before other warps read them
  z = wsum = z32 = 0.0;
  for (int w = 0; w < kWarps; ++w) z += s_z[w], wsum += s_w[w], z32 += s_z32[w];

  // 3. Each warp's mass over its segment, tile by tile in index order; the last index with p > 0.
  const int seg = (cols + kWarps - 1) / kWarps;
  const int begin = warp * seg, end = min(cols, begin + seg);
  double mass = 0.0;
  int last = -1;
  for (int base = begin; base < end; base += 32) {
    const int j = base + lane;
    const float pj = j < end ? probability(p[j], m, z32) : 0.0f;
    if (pj > 0.0f) last = j;
    mass += __shfl_sync(kFull, warp_scan(pj, lane), 31);
  }
  last = cuda_reduce::warp_max(last);
  if (lane == 0) s_mass[warp] = mass, s_last[warp] = last;
  __syncthreads();
  const double u = uniform[r];
  if (tid == 0) {
    double before = 0.0;
    int crossing = -1;
    for (int w = 0; w < kWarps && crossing < 0; ++w) {
      if (before + s_mass[w] > u) crossing = w;
      else before += s_mass[w];
    }
    s_warp = crossing;
    s_before = before;
  }
  __syncthreads();

  // 4. The crossing itself.
  if (warp != (s_warp < 0 ? 0 : s_warp)) return;
  int sample = -1;
  if (s_warp >= 0) {
    double run = s_before;
    for (int base = s_warp * seg; base < cols && sample < 0; base += 32) {
      const int j = base + lane;
      const float pj = j < cols ? probability(p[j], m, z32) : 0.0f;
      const double scan = run + warp_scan(pj, lane);
      const unsigned over = __ballot_sync(kFull, scan > u);
      if (over) sample = base + __ffs(over) - 1;
      run = __shfl_sync(kFull, scan, 31);
    }
  }
  if (sample < 0) {  // u above the total: the last index with p > 0
    int l = lane < kWarps ? s_last[lane] : -1;
    sample = cuda_reduce::warp_max(l);
  }
  if (lane == 0) out[r] = RowDraw{static_cast<float>(log(z) - wsum / z), argmax, sample};
}

__global__ void fill_rows_kernel(float* data, std::size_t ld, int cols, float value) {
  pdl::wait_for_predecessor();
  float* row = data + blockIdx.x * ld;
  for (int j = static_cast<int>(threadIdx.x); j < cols; j += static_cast<int>(blockDim.x)) row[j] = value;
}

}  // namespace

void canvas_sample_cuda(const CanvasSampleArgs& a, cudaStream_t stream) {
  check_canvas_sample(a, "canvas sample (CUDA)");
  if (a.rows == 0) return;
  check(a.rows < (1u << 31), "canvas sample (CUDA): ", a.rows, " rows too many for one launch");
  const auto aligned = [](const void* ptr, std::size_t ld, std::size_t cols) {
    return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0 && ld % 4 == 0 && cols % 4 == 0;
  };
  const bool vec4 = aligned(a.logits.data, a.logits.ld, a.cols) && aligned(a.processed.data, a.processed.ld, a.cols);
  pdl::launch(vec4 ? canvas_sample_kernel<true> : canvas_sample_kernel<false>, static_cast<unsigned>(a.rows), kThreads, 0, stream,
              static_cast<const float*>(a.logits.data), a.logits.ld, static_cast<float*>(a.processed.data),
              a.processed.ld, static_cast<int>(a.cols), a.temperature, a.uniform, a.out);
}

void fill_rows_cuda(float* data, std::size_t ld, std::size_t rows, std::size_t cols, float value,
                    cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  check(rows < (1u << 31) && cols < (1u << 31), "fill rows (CUDA): ", rows, " × ", cols, " too large");
  pdl::launch(fill_rows_kernel, static_cast<unsigned>(rows), 256, 0, stream, data, ld, static_cast<int>(cols), value);
}

}  // namespace il::ops
