// SAM's attention on CUDA (ops/sam_attention.h), a simple kernel first: one warp per (view, head,
// query row), f32 arithmetic, no score matrix. Per query the warp
//   1. stages q (unscaled, f32) in shared memory, lanes over the head dimensions;
//   2. computes the 2S relative terms q · Rh[qy − k + S − 1] and q · Rw[qx − k + S − 1]
//      (k = 0 … S − 1), one per lane at a time, into shared memory;
//   3. streams the tile's S × S keys 32 at a time, a key per lane: score = scale · q · k +
//      rel_h[ky] + rel_w[kx] (a padding position's key is the bias k), then an online softmax
//      (warp max, rescale) and O += P · V with lanes over the head dimensions (a padding position's
//      value is the bias v);
//   4. writes O / l rounded once to the output type.
// Keys and values are read from global memory (L1 / L2 serve the tile's rows to the warps of a
// block, which hold neighbouring queries); speed is for later.
#include <cmath>

#include "core/error.h"
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

constexpr int kWarps = 4;  // query rows per block
constexpr int kMaxD = static_cast<int>(kSamMaxHeadDim);
constexpr int kMaxS = static_cast<int>(kSamMaxSide);
constexpr int kPerLane = kMaxD / 32;  // output dimensions per lane

struct SamTables {
  int side[kSamMaxTables];
  const float* h[kSamMaxTables];
  const float* w[kSamMaxTables];
  int count;
};

template <typename T>
struct SamParams {
  const T* qkv;
  std::size_t ld_qkv;
  const float* bias;
  T* out;
  std::size_t ldo;
  const int32_t* view_starts;
  int heads, head_dim, window;
  float scale;
  SamTables tables;
};

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The integer square root of n when n is a square, else −1.
__device__ __forceinline__ int square_side(int n) {
  int g = static_cast<int>(sqrtf(static_cast<float>(n)) + 0.5f);
  while (g > 0 && g * g > n) --g;
  while ((g + 1) * (g + 1) <= n) ++g;
  return g * g == n ? g : -1;
}

template <typename T>
__global__ void __launch_bounds__(kWarps * 32) sam_attention_kernel(SamParams<T> p) {
  __shared__ float q_s[kWarps][kMaxD];
  __shared__ float rel_s[kWarps][2 * kMaxS];
  const int view = static_cast<int>(blockIdx.y), head = static_cast<int>(blockIdx.z);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int start = p.view_starts[view];
  const int n = p.view_starts[view + 1] - start;
  const int r = static_cast<int>(blockIdx.x) * kWarps + warp;  // the query's index in its view
  if (n <= 0 || r >= n) return;  // warp-uniform; no block-wide barrier follows
  const int g = square_side(n);
  if (g < 0) return;  // not a square: refused on the host
  const int S = p.window > 0 ? p.window : g;
  const float* Rh = nullptr;
  const float* Rw = nullptr;
  for (int i = 0; i < p.tables.count; ++i)
    if (p.tables.side[i] == S) {
      Rh = p.tables.h[i];
      Rw = p.tables.w[i];
      break;
    }
  if (Rh == nullptr || S > kMaxS) return;  // no table of this side: refused on the host
  const int hd = p.head_dim, W = p.heads * hd;
  const int y = r / g, x = r % g;
  const int y0 = y / S * S, x0 = x / S * S;  // the tile's corner (0, 0 when global)
  const int qy = y - y0, qx = x - x0;
  float* q = q_s[warp];
  float* rel = rel_s[warp];
  const T* qrow = p.qkv + static_cast<std::size_t>(start + r) * p.ld_qkv + static_cast<std::size_t>(head) * hd;
  for (int c = lane; c < hd; c += 32) q[c] = elem::load(qrow + c);
  __syncwarp();
  for (int k = lane; k < 2 * S; k += 32) {
    const float* t = k < S ? Rh + static_cast<std::size_t>(qy + S - 1 - k) * hd
                           : Rw + static_cast<std::size_t>(qx + S - 1 - (k - S)) * hd;
    float dot = 0.0f;
    for (int c = 0; c < hd; ++c) dot = fmaf(q[c], t[c], dot);
    rel[k] = dot;
  }
  __syncwarp();

  const float* bias_k = p.bias + W + head * hd;
  const float* bias_v = p.bias + 2 * W + head * hd;
  const T* kbase = p.qkv + static_cast<std::size_t>(start) * p.ld_qkv + W + head * hd;
  const T* vbase = p.qkv + static_cast<std::size_t>(start) * p.ld_qkv + 2 * W + head * hd;
  float m = -INFINITY, l = 0.0f, acc[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) acc[i] = 0.0f;
  const int keys = S * S;
  for (int k0 = 0; k0 < keys; k0 += 32) {
    const int j = k0 + lane;
    float s = -INFINITY;
    int row = -1;  // the key's row in the view, or −1 for a padding position
    if (j < keys) {
      const int ky = j / S, kx = j % S;
      const int vy = y0 + ky, vx = x0 + kx;
      row = vy < g && vx < g ? vy * g + vx : -1;
      float dot = 0.0f;
      if (row >= 0) {
        const T* kr = kbase + static_cast<std::size_t>(row) * p.ld_qkv;
        for (int c = 0; c < hd; ++c) dot = fmaf(q[c], elem::load(kr + c), dot);
      } else {
        for (int c = 0; c < hd; ++c) dot = fmaf(q[c], bias_k[c], dot);
      }
      s = dot * p.scale + rel[ky] + rel[S + kx];
    }
    const float m_new = fmaxf(m, warp_max(s));  // finite: lane 0 holds a key (k0 < keys)
    const float corr = expf(m - m_new);         // 0 on the first chunk (m = −inf)
    const float e = expf(s - m_new);            // 0 past the keys (s = −inf)
    l = l * corr + warp_sum(e);
    m = m_new;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) acc[i] *= corr;
    const int nk = min(32, keys - k0);
    for (int jj = 0; jj < nk; ++jj) {
      const float pj = __shfl_sync(0xffffffffu, e, jj);
      const int rj = __shfl_sync(0xffffffffu, row, jj);
      if (rj >= 0) {
        const T* vr = vbase + static_cast<std::size_t>(rj) * p.ld_qkv;
#pragma unroll
        for (int i = 0; i < kPerLane; ++i) {
          const int c = lane + 32 * i;
          if (c < hd) acc[i] = fmaf(pj, elem::load(vr + c), acc[i]);
        }
      } else {
#pragma unroll
        for (int i = 0; i < kPerLane; ++i) {
          const int c = lane + 32 * i;
          if (c < hd) acc[i] = fmaf(pj, bias_v[c], acc[i]);
        }
      }
    }
  }
  const float inv = 1.0f / l;  // l ≥ 1: the max key contributes exp(0)
  T* o = p.out + static_cast<std::size_t>(start + r) * p.ldo + static_cast<std::size_t>(head) * hd;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int c = lane + 32 * i;
    if (c < hd) elem::store(o + c, acc[i] * inv);
  }
}

}  // namespace

void sam_attention_cuda(const SamAttentionCudaArgs& a, cudaStream_t stream) {
  const char* what = "sam attention (CUDA)";
  check(a.qkv.data && a.qkv_bias && a.out.data && a.view_starts, what, ": null operand");
  check(a.heads > 0 && a.head_dim > 0, what, ": no heads");
  check(a.head_dim <= kSamMaxHeadDim, what, ": head_dim ", a.head_dim, " (at most ", kSamMaxHeadDim, ")");
  check(a.qkv.dtype == a.out.dtype, what, ": qkv and out differ in element type");
  check(a.qkv.ld >= 3 * a.heads * a.head_dim && a.out.ld >= a.heads * a.head_dim, what,
        ": row stride smaller than the row");
  check(a.num_tables <= kSamMaxTables, what, ": ", a.num_tables, " relative position tables (at most ",
        kSamMaxTables, ")");
  check(a.window <= kSamMaxSide, what, ": window ", a.window, " (at most ", kSamMaxSide, ")");
  check(a.heads <= 65535 && a.views <= 65535, what, ": ", a.views, " views of ", a.heads,
        " heads are too many for one launch");
  check(a.heads * a.head_dim * 3 < (std::size_t{1} << 30) && a.max_view_tokens < (std::size_t{1} << 30), what,
        ": sizes too large");
  if (a.views == 0 || a.max_view_tokens == 0) return;
  SamTables tables{};
  for (std::size_t i = 0; i < a.num_tables; ++i) {
    check(a.tables[i].side > 0 && a.tables[i].side <= kSamMaxSide && a.tables[i].h && a.tables[i].w, what,
          ": relative position table ", i, " of side ", a.tables[i].side, " (sides 1 to ", kSamMaxSide,
          ", both tables present)");
    tables.side[i] = static_cast<int>(a.tables[i].side);
    tables.h[i] = a.tables[i].h;
    tables.w[i] = a.tables[i].w;
  }
  tables.count = static_cast<int>(a.num_tables);
  const dim3 grid(static_cast<unsigned>((a.max_view_tokens + kWarps - 1) / kWarps), static_cast<unsigned>(a.views),
                  static_cast<unsigned>(a.heads));
  elem::dispatch(a.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    const SamParams<T> p{static_cast<const T*>(a.qkv.data), a.qkv.ld, a.qkv_bias, static_cast<T*>(a.out.data),
                         a.out.ld, a.view_starts, static_cast<int>(a.heads), static_cast<int>(a.head_dim),
                         static_cast<int>(a.window), a.scale, tables};
    sam_attention_kernel<T><<<grid, kWarps * 32, 0, stream>>>(p);
    IL_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace il::ops
