// Attention for one query row per sequence, its first or its last (ops/attention.h,
// attention_first_cpu / attention_last_cpu): what a model pooled from one token needs of its last
// layer (CLS: the first; last-token pooling under a causal mask: the last, the one row that sees
// every key). One block per (sequence, head); its four warps take every fourth key of the row's
// range, each lane holding head_dim / 32 (rounded up to a power of two) of the dimensions: q·k by
// a warp reduction, an online softmax per warp in f32, then the four partial results merged
// through shared memory. The work is one row per sequence, so the kernel only streams the
// sequence's K and V once per head: memory-bound, a few microseconds.
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/launch_cuda.cuh"
#include "ops/ops_cuda.h"

#include <cmath>

namespace il::ops {
namespace {

constexpr int kWarps = 4;

// E: dimensions a lane holds (head_dim ≤ 32 E).
template <typename T, int E>
__global__ void __launch_bounds__(32 * kWarps) attention_one_row_kernel(AttentionCudaArgs a, bool last) {
  pdl::wait_for_predecessor();
  const int s = static_cast<int>(blockIdx.x), head = static_cast<int>(blockIdx.y);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int hd = static_cast<int>(a.head_dim);
  const std::size_t start = static_cast<std::size_t>(a.seq_starts[s]);
  const int len = a.seq_starts[s + 1] - a.seq_starts[s];
  T* out = static_cast<T*>(a.out) + static_cast<std::size_t>(s) * a.ldo + static_cast<std::size_t>(head) * hd;
  if (len == 0) {  // no such token: zeros, as the CPU op writes
    for (int d = static_cast<int>(threadIdx.x); d < hd; d += 32 * kWarps) elem::store(out + d, 0.0f);
    return;
  }
  // Keys [lo, hi) of row i (ops/attention_cpu.cc's key_range); key i itself is always one.
  const int i = last ? len - 1 : 0;
  int lo = 0, hi = a.mask == MaskMode::kCausal ? i + 1 : len;
  if (a.window > 0) {
    const std::size_t half = a.window / 2;
    if (static_cast<std::size_t>(i) > half) lo = i - static_cast<int>(half);
    if (static_cast<std::size_t>(i) + half + 1 < static_cast<std::size_t>(hi)) hi = i + static_cast<int>(half) + 1;
  }
  const std::size_t kvh = static_cast<std::size_t>(head) / (a.heads / a.kv_heads);
  const T* q = static_cast<const T*>(a.q) + (start + static_cast<std::size_t>(i)) * a.ldq +
               static_cast<std::size_t>(head) * hd;
  const T* k = static_cast<const T*>(a.k) + start * a.ldk + kvh * hd;
  const T* v = static_cast<const T*>(a.v) + start * a.ldv + kvh * hd;

  float qr[E], o[E];
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const int d = lane * E + e;
    qr[e] = d < hd ? elem::load(q + d) * a.scale : 0.0f;
    o[e] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  for (int j = lo + warp; j < hi; j += kWarps) {
    const T* kj = k + static_cast<std::size_t>(j) * a.ldk;
    float dot = 0.0f;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int d = lane * E + e;
      if (d < hd) dot = fmaf(qr[e], elem::load(kj + d), dot);
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, off);
    const float mn = fmaxf(m, dot);
    const float c = expf(m - mn), p = expf(dot - mn);  // m = −inf at first: c = 0
    l = l * c + p;
    const T* vj = v + static_cast<std::size_t>(j) * a.ldv;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int d = lane * E + e;
      o[e] = o[e] * c + (d < hd ? p * elem::load(vj + d) : 0.0f);
    }
    m = mn;
  }

  // Merge the warps: rescale each to the common max, sum, normalise.
  __shared__ float wm[kWarps], wl[kWarps], wo[kWarps][32 * E];
  if (lane == 0) {
    wm[warp] = m;
    wl[warp] = l;
  }
#pragma unroll
  for (int e = 0; e < E; ++e) wo[warp][lane * E + e] = o[e];
  __syncthreads();
  float mx = -INFINITY;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, wm[w]);
  float sum = 0.0f, scale[kWarps];
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    scale[w] = wm[w] == -INFINITY ? 0.0f : expf(wm[w] - mx);  // a warp without keys adds nothing
    sum += wl[w] * scale[w];
  }
  const float inv = 1.0f / sum;  // key i is always admissible: sum > 0
  for (int d = static_cast<int>(threadIdx.x); d < hd; d += 32 * kWarps) {
    float acc = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) acc += wo[w][d] * scale[w];
    elem::store(out + d, acc * inv);
  }
}

template <typename T>
void launch(const AttentionCudaArgs& a, bool last, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(a.num_seqs), static_cast<unsigned>(a.heads));
  const dim3 block(32 * kWarps);
  if (a.head_dim <= 32) return pdl::launch(attention_one_row_kernel<T, 1>, grid, block, 0, stream, a, last);
  if (a.head_dim <= 64) return pdl::launch(attention_one_row_kernel<T, 2>, grid, block, 0, stream, a, last);
  if (a.head_dim <= 128) return pdl::launch(attention_one_row_kernel<T, 4>, grid, block, 0, stream, a, last);
  pdl::launch(attention_one_row_kernel<T, 8>, grid, block, 0, stream, a, last);
}

void attention_one_row_cuda(const AttentionCudaArgs& a, bool last, cudaStream_t stream) {
  const char* what = last ? "attention (last rows)" : "attention (first rows)";
  check_attention_shape(a, kAttentionMaxHeadDim, what);
  check(a.num_seqs < (1u << 31) && a.heads <= 65535, what, ": batch too large for one launch");
  if (a.num_seqs == 0) return;
  elem::dispatch(a.type, [&](auto tag) { launch<decltype(tag)>(a, last, stream); });
}

}  // namespace

void attention_first_cuda(const AttentionCudaArgs& a, cudaStream_t stream) { attention_one_row_cuda(a, false, stream); }

void attention_last_cuda(const AttentionCudaArgs& a, cudaStream_t stream) { attention_one_row_cuda(a, true, stream); }

}  // namespace il::ops
