// Attention pooling with a learned query (ops/probe_attention.h) on the GPU: one block of
// kWarps warps per (sequence, head). Each warp walks its share of the sequence's keys (key j to
// warp j mod kWarps) with an online softmax: the score from a warp-wide dot product (lanes over
// the head's columns), then the running maximum, denominator and weighted value sum, each lane
// holding head_dim / 32 columns (at most kProbeAttentionMaxHeadDim / 32). The warps' partial
// states merge through shared memory at the end. Loads into f32, f32 arithmetic, one rounding on
// the store. A pooling head runs once per image, so the kernel stays simple.
#include <cmath>

#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/launch_cuda.cuh"
#include "ops/ops_cuda.h"
#include "ops/reduce_cuda.cuh"

namespace il::ops {
namespace {

constexpr int kWarps = 4;
constexpr int kCols = static_cast<int>(kProbeAttentionMaxHeadDim / 32);  // columns per lane

template <typename T>
struct ProbeParams {
  const float* q;
  const T* k;
  std::size_t ldk;
  const T* v;
  std::size_t ldv;
  T* out;
  std::size_t ldo;
  const int32_t* seq_starts;
  int heads, head_dim;
  float scale;
};

template <typename T>
__global__ void probe_attention_kernel(ProbeParams<T> p) {
  pdl::wait_for_predecessor();
  __shared__ float s_max[kWarps], s_sum[kWarps];
  __shared__ float s_acc[kWarps][kProbeAttentionMaxHeadDim];
  const int s = static_cast<int>(blockIdx.x), h = static_cast<int>(blockIdx.y);
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int b = p.seq_starts[s], e = p.seq_starts[s + 1];
  const int hd = p.head_dim, col0 = h * hd;
  float q[kCols], acc[kCols];
#pragma unroll
  for (int i = 0; i < kCols; ++i) {
    const int c = lane + 32 * i;
    q[i] = c < hd ? p.q[col0 + c] : 0.0f;
    acc[i] = 0.0f;
  }
  float m = -INFINITY, sum = 0.0f;
  for (int j = b + warp; j < e; j += kWarps) {
    const T* kr = p.k + static_cast<std::size_t>(j) * p.ldk + col0;
    float d = 0.0f;
#pragma unroll
    for (int i = 0; i < kCols; ++i) {
      const int c = lane + 32 * i;
      if (c < hd) d += q[i] * elem::load(kr + c);
    }
    const float score = cuda_reduce::warp_sum(d) * p.scale;
    const float m_new = fmaxf(m, score);
    const float keep = expf(m - m_new), w = expf(score - m_new);  // exp(-inf) = 0 on the first key
    sum = sum * keep + w;
    const T* vr = p.v + static_cast<std::size_t>(j) * p.ldv + col0;
#pragma unroll
    for (int i = 0; i < kCols; ++i) {
      const int c = lane + 32 * i;
      acc[i] = acc[i] * keep + (c < hd ? w * elem::load(vr + c) : 0.0f);
    }
    m = m_new;
  }
  if (lane == 0) {
    s_max[warp] = m;
    s_sum[warp] = sum;
  }
#pragma unroll
  for (int i = 0; i < kCols; ++i) {
    const int c = lane + 32 * i;
    if (c < hd) s_acc[warp][c] = acc[i];
  }
  __syncthreads();
  if (warp != 0) return;
  float gm = -INFINITY;
  for (int w = 0; w < kWarps; ++w) gm = fmaxf(gm, s_max[w]);
  float total = 0.0f;
  float f[kWarps];
  for (int w = 0; w < kWarps; ++w) {
    f[w] = s_max[w] == -INFINITY ? 0.0f : expf(s_max[w] - gm);  // a warp that saw no key adds nothing
    total += s_sum[w] * f[w];
  }
  T* o = p.out + static_cast<std::size_t>(s) * p.ldo + col0;
  for (int c = lane; c < hd; c += 32) {
    float x = 0.0f;
    for (int w = 0; w < kWarps; ++w) x += s_acc[w][c] * f[w];
    elem::store(o + c, total > 0.0f ? x / total : 0.0f);  // an empty (padding) sequence: zeros
  }
}

}  // namespace

void probe_attention_cuda(const ProbeAttentionArgs& a, cudaStream_t stream) {
  check_probe_attention(a, "probe_attention (CUDA)");
  check(a.head_dim <= kProbeAttentionMaxHeadDim, "probe_attention: head_dim ", a.head_dim, " is above ",
        kProbeAttentionMaxHeadDim, " (CUDA)");
  if (a.num_seqs == 0) return;
  check(a.num_seqs < (1u << 31) && a.heads <= 65535, "probe_attention: too many sequences or heads for one launch");
  elem::dispatch(a.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    const ProbeParams<T> p{a.q, static_cast<const T*>(a.k.data), a.k.ld, static_cast<const T*>(a.v.data), a.v.ld,
                           static_cast<T*>(a.out.data), a.out.ld, a.seq_starts, static_cast<int>(a.heads),
                           static_cast<int>(a.head_dim), a.scale};
    const dim3 grid(static_cast<unsigned>(a.num_seqs), static_cast<unsigned>(a.heads));
    pdl::launch(probe_attention_kernel<T>, grid, 32 * kWarps, 0, stream, p);
  });
}

}  // namespace il::ops
