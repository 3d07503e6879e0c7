// SAM's attention on CUDA (ops/sam_attention.h). Head dim 64 (SAM-B's), global or windowed, runs
// on the tiled kernel further down; any other head dim on this per-query one: one warp per (view,
// head, query row), f32 arithmetic, no score matrix. Per query the warp
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
#include <algorithm>
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


// Blocks at head_dim 64, global or windowed: a tiled kernel. A block holds kBq = 64 queries of
// one (view, head, tile) — the tile being the whole view (global) or one window of the padded
// view — and walks the tile's keys kBk = 64 at a time through shared memory (f32), so each key
// and value is read from global memory once per block instead of once per query. A padding
// position of a window is a key and value of the projection's bias (the reference's zero rows
// through qkv); padding queries are computed for nothing and not stored. Its 8 warps hold 8
// queries each; a lane scores 2 keys against its warp's 8 queries at once (16 FMAs per 10 shared
// loads), the probabilities go through shared memory, and a lane accumulates 2 output dimensions
// of the 8 queries. The relative terms (2S per query) are computed once per block into shared
// memory and looked up per key: no score matrix beyond the 64 × 64 tile in registers.
constexpr int kBq = 64, kBk = 64, kFlashWarps = 8, kQPerWarp = kBq / kFlashWarps, kFlashD = 64;

// The blocks one (view, head) needs along x: its tiles times the query tiles of one tile.
__host__ __device__ inline int flash_blocks(int g, int window) {
  const int S = window > 0 ? window : g, per_side = (g + S - 1) / S;
  return per_side * per_side * ((S * S + kBq - 1) / kBq);
}

template <typename T>
__global__ void __launch_bounds__(kFlashWarps * 32) sam_flash_kernel(SamParams<T> p, int rel_cols) {
  extern __shared__ float smem[];
  float* q_s = smem;                         // [kBq][kFlashD + 1]
  float* k_s = q_s + kBq * (kFlashD + 1);    // [kBk][kFlashD + 1]
  float* v_s = k_s + kBk * (kFlashD + 1);    // [kBk][kFlashD]
  float* p_s = v_s + kBk * kFlashD;          // [kFlashWarps][kQPerWarp][kBk]
  float* rel_s = p_s + kFlashWarps * kQPerWarp * kBk;  // [kBq][rel_cols]: Rh terms, then Rw terms
  const int view = static_cast<int>(blockIdx.y), head = static_cast<int>(blockIdx.z);
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int start = p.view_starts[view];
  const int n = p.view_starts[view + 1] - start;
  if (n <= 0) return;  // block-uniform
  const int g = square_side(n);
  if (g < 0) return;  // refused on the host
  // The tile: S on a side (the view's side, or the window), its corner (y0, x0) in the view, its
  // positions in row-major order (padding included).
  const int S = p.window > 0 ? p.window : g, per_side = (g + S - 1) / S, keys = S * S;
  const int q_tiles = (keys + kBq - 1) / kBq, tile = static_cast<int>(blockIdx.x) / q_tiles;
  if (tile >= per_side * per_side || 2 * S > rel_cols) return;  // past this view's blocks; refused on the host
  const int q0 = static_cast<int>(blockIdx.x) % q_tiles * kBq;
  const int y0 = tile / per_side * S, x0 = tile % per_side * S;
  const auto row_of = [&](int i) {  // the view row of tile position i, or −1 for padding
    const int vy = y0 + i / S, vx = x0 + i % S;
    return vy < g && vx < g ? vy * g + vx : -1;
  };
  const float* Rh = nullptr;
  const float* Rw = nullptr;
  for (int i = 0; i < p.tables.count; ++i)
    if (p.tables.side[i] == S) {
      Rh = p.tables.h[i];
      Rw = p.tables.w[i];
      break;
    }
  if (Rh == nullptr) return;  // refused on the host
  const int W = p.heads * kFlashD;
  const T* base = p.qkv + static_cast<std::size_t>(start) * p.ld_qkv + static_cast<std::size_t>(head) * kFlashD;
  const float* bias_k = p.bias + W + head * kFlashD;
  const float* bias_v = p.bias + 2 * W + head * kFlashD;

  // The query tile (zeros for padding and past the tile), then its relative terms.
  for (int i = tid; i < kBq * kFlashD; i += kFlashWarps * 32) {
    const int r = i / kFlashD, c = i % kFlashD;
    const int row = q0 + r < keys ? row_of(q0 + r) : -1;
    q_s[r * (kFlashD + 1) + c] = row >= 0 ? elem::load(base + static_cast<std::size_t>(row) * p.ld_qkv + c) : 0.0f;
  }
  __syncthreads();
  for (int i = tid; i < kBq * 2 * S; i += kFlashWarps * 32) {
    const int r = i / (2 * S), k = i % (2 * S);
    const int qr = min(q0 + r, keys - 1), qy = qr / S, qx = qr % S;
    const float* t = k < S ? Rh + static_cast<std::size_t>(qy + S - 1 - k) * kFlashD
                           : Rw + static_cast<std::size_t>(qx + S - 1 - (k - S)) * kFlashD;
    const float* q = q_s + r * (kFlashD + 1);
    float dot = 0.0f;
#pragma unroll 16
    for (int c = 0; c < kFlashD; ++c) dot = fmaf(q[c], t[c], dot);
    rel_s[r * rel_cols + k] = dot;
  }

  float m[kQPerWarp], l[kQPerWarp], acc[kQPerWarp][2];
#pragma unroll
  for (int j = 0; j < kQPerWarp; ++j) {
    m[j] = -INFINITY;
    l[j] = 0.0f;
    acc[j][0] = acc[j][1] = 0.0f;
  }
  const int qbase = warp * kQPerWarp;  // this warp's queries in the tile
  float* pw = p_s + warp * kQPerWarp * kBk;
  for (int k0 = 0; k0 < keys; k0 += kBk) {
    __syncthreads();  // the previous tile's readers are done (and rel_s is written, first time)
    for (int i = tid; i < kBk * kFlashD; i += kFlashWarps * 32) {
      const int r = i / kFlashD, c = i % kFlashD;
      const bool in = k0 + r < keys;
      const int row = in ? row_of(k0 + r) : -1;
      float kv = 0.0f, vv = 0.0f;
      if (row >= 0) {
        const T* src = base + static_cast<std::size_t>(row) * p.ld_qkv;
        kv = elem::load(src + W + c);
        vv = elem::load(src + 2 * W + c);
      } else if (in) {  // a padding position of the window
        kv = bias_k[c];
        vv = bias_v[c];
      }
      k_s[r * (kFlashD + 1) + c] = kv;
      v_s[r * kFlashD + c] = vv;
    }
    __syncthreads();
    float sc[kQPerWarp][2];
#pragma unroll
    for (int j = 0; j < kQPerWarp; ++j) sc[j][0] = sc[j][1] = 0.0f;
    const float* ka = k_s + lane * (kFlashD + 1);
    const float* kb = k_s + (lane + 32) * (kFlashD + 1);
#pragma unroll 4
    for (int c = 0; c < kFlashD; ++c) {
      const float a = ka[c], b = kb[c];
#pragma unroll
      for (int j = 0; j < kQPerWarp; ++j) {
        const float q = q_s[(qbase + j) * (kFlashD + 1) + c];
        sc[j][0] = fmaf(q, a, sc[j][0]);
        sc[j][1] = fmaf(q, b, sc[j][1]);
      }
    }
#pragma unroll
    for (int j = 0; j < kQPerWarp; ++j) {
      const float* rel = rel_s + (qbase + j) * rel_cols;
      float s[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int key = k0 + lane + 32 * h;
        s[h] = key < keys ? sc[j][h] * p.scale + rel[key / S] + rel[S + key % S] : -INFINITY;
      }
      const float m_new = fmaxf(m[j], warp_max(fmaxf(s[0], s[1])));  // finite: key k0 < n
      const float corr = expf(m[j] - m_new);
      const float e0 = expf(s[0] - m_new), e1 = expf(s[1] - m_new);
      l[j] = l[j] * corr + warp_sum(e0 + e1);
      m[j] = m_new;
      acc[j][0] *= corr;
      acc[j][1] *= corr;
      pw[j * kBk + lane] = e0;
      pw[j * kBk + lane + 32] = e1;
    }
    __syncwarp();
    const int nk = min(kBk, keys - k0);
    for (int jj = 0; jj < nk; ++jj) {
      const float v0 = v_s[jj * kFlashD + lane], v1 = v_s[jj * kFlashD + lane + 32];
#pragma unroll
      for (int j = 0; j < kQPerWarp; ++j) {
        const float pj = pw[j * kBk + jj];
        acc[j][0] = fmaf(pj, v0, acc[j][0]);
        acc[j][1] = fmaf(pj, v1, acc[j][1]);
      }
    }
    __syncwarp();
  }
#pragma unroll
  for (int j = 0; j < kQPerWarp; ++j) {
    const int i = q0 + qbase + j, row = i < keys ? row_of(i) : -1;
    if (row < 0) continue;
    const float inv = 1.0f / l[j];
    T* o = p.out + static_cast<std::size_t>(start + row) * p.ldo + static_cast<std::size_t>(head) * kFlashD;
    elem::store(o + lane, acc[j][0] * inv);
    elem::store(o + lane + 32, acc[j][1] * inv);
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
  // Head dim 64 (SAM-B's) takes the tiled kernel, global and windowed (its shared memory sized by
  // the largest table side); other head dims the per-query one.
  std::size_t max_side = 0;
  for (std::size_t i = 0; i < a.num_tables; ++i) max_side = std::max(max_side, a.tables[i].side);
  const bool flash = a.head_dim == static_cast<std::size_t>(kFlashD);
  const int rel_cols = static_cast<int>(2 * max_side);
  const std::size_t flash_smem =
      sizeof(float) * (static_cast<std::size_t>(kBq) * (kFlashD + 1) + static_cast<std::size_t>(kBk) * (kFlashD + 1) +
                       static_cast<std::size_t>(kBk) * kFlashD + static_cast<std::size_t>(kFlashWarps) * kQPerWarp * kBk +
                       static_cast<std::size_t>(kBq) * static_cast<std::size_t>(rel_cols));
  elem::dispatch(a.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    const SamParams<T> p{static_cast<const T*>(a.qkv.data), a.qkv.ld, a.qkv_bias, static_cast<T*>(a.out.data),
                         a.out.ld, a.view_starts, static_cast<int>(a.heads), static_cast<int>(a.head_dim),
                         static_cast<int>(a.window), a.scale, tables};
    if (flash) {
      // Once per element type, at the largest size any launch asks for (tables of side
      // kSamMaxSide): not a stream operation, so launches stay graph-capturable.
      static const bool sized = [] {
        const std::size_t most = sizeof(float) * (static_cast<std::size_t>(kBq) * (kFlashD + 1) +
                                                  static_cast<std::size_t>(kBk) * (kFlashD + 1) +
                                                  static_cast<std::size_t>(kBk) * kFlashD +
                                                  static_cast<std::size_t>(kFlashWarps) * kQPerWarp * kBk +
                                                  static_cast<std::size_t>(kBq) * 2 * kSamMaxSide);
        IL_CUDA_CHECK(cudaFuncSetAttribute(sam_flash_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(most)));
        return true;
      }();
      (void)sized;
      // Enough blocks along x for the largest view (a smaller one's extra blocks exit at once).
      std::size_t g_max = static_cast<std::size_t>(std::sqrt(static_cast<double>(a.max_view_tokens)));
      while (g_max * g_max < a.max_view_tokens) ++g_max;
      const dim3 fgrid(static_cast<unsigned>(flash_blocks(static_cast<int>(g_max), static_cast<int>(a.window))),
                       static_cast<unsigned>(a.views), static_cast<unsigned>(a.heads));
      sam_flash_kernel<T><<<fgrid, kFlashWarps * 32, flash_smem, stream>>>(p, rel_cols);
    } else {
      sam_attention_kernel<T><<<grid, kWarps * 32, 0, stream>>>(p);
    }
    IL_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace il::ops
