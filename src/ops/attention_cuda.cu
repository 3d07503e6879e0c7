// Ragged flash-style attention on CUDA cores: q, k, v and out in f32, f16 or bf16, computed in
// f32 with plain FMAs (no TF32, no tensor cores). It is the f32 parity kernel and the f16 / bf16
// fallback where head_dim exceeds the tensor-core kernel's 128.
//
// Design (FlashAttention-2 on CUDA cores). A block owns (sequence, BR query rows, head) and
// streams the keys of the sequence through shared memory BC at a time; per row it keeps the
// running max and sum of the online softmax in registers, so memory is O(tile), never O(n²).
// The block's 128 threads form a 8 × 16 grid: thread (ty, tx) owns the query rows
// ty·R … ty·R + R − 1 (R = 8, or 4 at D = 256) and
//   - in S = Q·Kᵀ the keys tx, tx + 16, tx + 32, … of the tile: an R × BC/16 register tile of
//     scores. Per 4 dimensions it reads each key's 4 values once (float4) and the R queries of
//     each dimension as R/4 broadcast float4 (the queries are staged transposed, [d][row]);
//   - in O += P·V the output dimensions tx·4 … tx·4 + 3 (+ 64, + 128, …): per key, the R
//     probabilities (stored transposed, [key][row]) and 4 values of V, float4 each.
// At D = 64 (8 rows × 4 keys, 8 rows × 4 dims) a shared load feeds about 11 FMAs in both
// products; the kernel this replaced (one key or one dimension per lane) fed about one.
// The 16 threads of a row are one half warp, so the row max is four xor shuffles; the row sums
// stay per thread (each thread rescales its own partial sum) and are reduced once at the end.
// Scores are in base 2 (the queries are staged pre-multiplied by scale · log2 e), so each
// probability is one exp2f.
//
// Staging. f32 rows that are 16-byte aligned are copied by cp.async (no registers, zero-filled
// past the keys the block needs), and the copies overlap the arithmetic: V of a tile lands while
// the block computes its scores, K of the next tile while it computes P·V; the two
// __syncthreads of a tile are the points where a buffer is both filled and free. f16 / bf16
// (8-byte vectors, converted) and unaligned views (scalars) take the same schedule with ordinary
// loads.
// Bank conflicts: K rows are padded to D + 4 floats, so the 8 lanes of a float4 phase reading
// keys tx … tx + 7 hit distinct 4-bank groups; queries and probabilities are read as broadcasts,
// V rows contiguously.
//
// Masks follow ops/attention.h exactly (key_range in ops/attention_mask_cuda.cuh). A tile that
// every row of the block sees whole (all of a bidirectional sequence but its last partial tile)
// skips the per-element mask; rows past the sequence end and warps whose rows all lie past it
// skip the arithmetic, and blocks that start past it exit.
//
// Measured on the H200 (bge-base shapes, 12 heads, D = 64, f32, 128 sequences × 256): 0.79 ms
// per layer, 32.6 TFLOP/s counting 4·n²·d per head (about half the f32 FMA peak), against
// 2.09 ms / 12.3 TFLOP/s for the kernel this replaced; minilm (D = 32) 0.46 ms (was 1.16), d96
// 64 × 512 3.0 ms (was 9.8), causal GQA D = 128 32 × 1024 4.8 ms (was 11.2), 2 × 8192 at
// D = 128 34 ms (was 98). Registers (ptxas, sm_90): 168 at D = 64 (3 blocks per SM), 239–250 at
// D = 128 / 256 (2), 128 at D = 32 (4).
#include <cmath>
#include <type_traits>

#include "ops/attention_mask_cuda.cuh"
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

constexpr int kThreads = 128;  // 8 row groups (ty) × 16 key / dimension lanes (tx)
constexpr int kLanes = 16;     // tx: the threads that share a row, one half warp
constexpr float kLog2e = 1.4426950408889634f;

// Tile shape per head-dim bucket D (head_dim ≤ D, zero-padded in shared memory).
template <int D>
struct Tile {
  static constexpr int kRows = D > 128 ? 4 : 8;              // query rows per thread (R)
  static constexpr int kBlockRows = (kThreads / kLanes) * kRows;  // BR: 64, or 32 at D = 256
  static constexpr int kKeys = D > 64 ? 32 : 64;              // BC, keys per tile
  static constexpr int kKeysPerThread = kKeys / kLanes;
  static constexpr int kVec = D >= 64 ? 4 : 2;                // consecutive output dims per lane
  static constexpr int kChunks = D / (kLanes * kVec);         // … and how many such groups
  static constexpr int kQStride = kBlockRows + 4;             // qt: [D][kQStride]
  static constexpr int kKStride = D + 4;                      // ks: [kKeys][kKStride]
  static constexpr int kPStride = kBlockRows + 4;             // pt: [kKeys][kPStride]
  static constexpr std::size_t kSmemFloats = static_cast<std::size_t>(D) * kQStride + kKeys * kKStride +
                                             kKeys * D + kKeys * kPStride;
  // Shared memory 43, 69, 77 and 108 KiB for D = 32 … 256: 5, 3, 2, 2 blocks per SM fit; the
  // bound tells ptxas to keep registers low enough for those.
  static constexpr int kMinBlocks = D <= 32 ? 4 : D <= 64 ? 3 : 2;
  static_assert(kChunks >= 1 && kKeys % kLanes == 0 && kRows % 4 == 0, "tile shape");
};

template <typename T>
struct AttnParams {
  const T* q;
  std::size_t ldq;
  const T* k;
  std::size_t ldk;
  const T* v;
  std::size_t ldv;
  T* out;
  std::size_t ldo;
  const int32_t* seq_starts;
  int group;     // query heads per kv head
  int head_dim;  // ≤ D of the instantiation
  float qscale;  // scale · log2 e: scores in base 2
  bool causal;
  int half_window;  // −1: no window
  bool vec;         // head_dim, strides and bases allow 4-element vectors
  const int32_t* key_limits;  // [num_seqs] or null: rows read only a sequence's first keys
  const int32_t* causal_prefix;  // [num_seqs] or null: under causal, every row also sees these keys
  RelativeBiasF32 rel;           // kRel only: DeBERTa's relative tables
};

// key_range (ops/attention_mask_cuda.cuh) with a causal prefix, in the CPU op's order
// (attention_cpu.cc): causal end, raised to the prefix `cpre` (already clamped to the sequence),
// then the window. Both ends stay non-decreasing in i, as the block's key range below assumes.
template <typename Params>
__device__ __forceinline__ void key_range_prefix(const Params& p, int i, int len, int cpre, int& lo, int& hi) {
  lo = 0;
  hi = p.causal ? max(i + 1, cpre) : len;
  if (p.half_window >= 0) {
    lo = max(0, i - p.half_window);
    hi = min(hi, i + p.half_window + 1);
  }
}

// 4 consecutive elements as f32 (the address is 4-element aligned).
__device__ __forceinline__ float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float4 load4(const __half* p) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
  const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
  return make_float4(a.x, a.y, b.x, b.y);
}
__device__ __forceinline__ float4 load4(const __nv_bfloat16* p) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
  const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
  return make_float4(a.x, a.y, b.x, b.y);
}

__device__ __forceinline__ void store4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
__device__ __forceinline__ void store4(__half* p, float4 v) {
  const __half2 a = __floats2half2_rn(v.x, v.y), b = __floats2half2_rn(v.z, v.w);
  uint2 u;
  u.x = *reinterpret_cast<const unsigned*>(&a);
  u.y = *reinterpret_cast<const unsigned*>(&b);
  *reinterpret_cast<uint2*>(p) = u;
}
__device__ __forceinline__ void store4(__nv_bfloat16* p, float4 v) {
  const __nv_bfloat162 a = __floats2bfloat162_rn(v.x, v.y), b = __floats2bfloat162_rn(v.z, v.w);
  uint2 u;
  u.x = *reinterpret_cast<const unsigned*>(&a);
  u.y = *reinterpret_cast<const unsigned*>(&b);
  *reinterpret_cast<uint2*>(p) = u;
}

// 16-byte global → shared copy without registers; src_bytes = 0 writes zeros (src unread).
__device__ __forceinline__ void cp_async16(float* dst, const float* src, int src_bytes) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

__device__ __forceinline__ void to_array(float4 v, float* a) {
  a[0] = v.x;
  a[1] = v.y;
  a[2] = v.z;
  a[3] = v.w;
}

// Copies keys kt … kt + BC − 1 of K or V (rows `base + key · ld`, head_dim wide) into dst
// ([BC][stride], D wide), zeros past key khi and past head_dim.
template <int D, typename T>
__device__ __forceinline__ void stage_keys(float* dst, int stride, const T* base, std::size_t ld, int kt, int khi,
                                           int hd, bool vec) {
  constexpr int BC = Tile<D>::kKeys, kQuads = D / 4;
  constexpr int kPerThread = BC * kQuads / kThreads;
  static_assert(BC * kQuads % kThreads == 0, "whole quads per thread");
  const int valid = min(BC, khi - kt), tid = static_cast<int>(threadIdx.x);
  if (vec) {
    if constexpr (std::is_same_v<T, float>) {
#pragma unroll
      for (int n = 0; n < kPerThread; ++n) {
        const int idx = tid + n * kThreads, j = idx / kQuads, d = 4 * (idx % kQuads);
        const bool ok = j < valid && d < hd;
        cp_async16(dst + j * stride + d, ok ? base + static_cast<std::size_t>(kt + j) * ld + d : base, ok ? 16 : 0);
      }
    } else {
      // Through registers, at most 8 vectors in flight per thread (more spills at D = 256,
      // where the accumulators take 64 registers).
      constexpr int kBatch = kPerThread < 8 ? kPerThread : 8;
#pragma unroll
      for (int n0 = 0; n0 < kPerThread; n0 += kBatch) {
        float4 r[kBatch];
#pragma unroll
        for (int n = 0; n < kBatch; ++n) {
          const int idx = tid + (n0 + n) * kThreads, j = idx / kQuads, d = 4 * (idx % kQuads);
          r[n] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
          if (j < valid && d < hd) r[n] = load4(base + static_cast<std::size_t>(kt + j) * ld + d);
        }
#pragma unroll
        for (int n = 0; n < kBatch; ++n) {
          const int idx = tid + (n0 + n) * kThreads;
          *reinterpret_cast<float4*>(dst + (idx / kQuads) * stride + 4 * (idx % kQuads)) = r[n];
        }
      }
    }
    return;
  }
  for (int idx = tid; idx < BC * D; idx += kThreads) {
    const int j = idx / D, d = idx % D;
    dst[j * stride + d] = j < valid && d < hd ? elem::load(base + static_cast<std::size_t>(kt + j) * ld + d) : 0.0f;
  }
}

// DeBERTa's relative bias of the thread's scores (kRel), in the scores' base-2 scale:
// s[i][j] = qscale · (c2p[row_i][m] + p2c[key_j][m]), m the table column of row_i − key_j
// (ops/ops_cuda.h, RelativeBiasF32). The thread's distances are base + i − 16 j, all distinct,
// so each score reads its own column. Rows and keys past the sequence read its last row.
template <int R, int KJ, typename T>
__device__ __forceinline__ void relative_bias_f32(const AttnParams<T>& p, float (&s)[R][KJ], int head, int start,
                                                  int len, int row0, int kt, int ty, int tx) {
  const RelativeBiasF32& r = p.rel;
  const std::size_t off = static_cast<std::size_t>(head) * r.head_stride;
  const float* c2p = r.c2p != nullptr ? r.c2p + off : nullptr;
  const float* p2c = r.p2c != nullptr ? r.p2c + off : nullptr;
  const int center = r.max_len - 1, end = start + len - 1;
  const int base = row0 + ty * R - kt - tx + center;
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int row = min(start + row0 + ty * R + i, end);
#pragma unroll
    for (int j = 0; j < KJ; ++j) {
      const int key = min(start + kt + tx + kLanes * j, end);
      const int idx = min(max(base + i - kLanes * j, 0), 2 * center);
      const int m = min(max(static_cast<int>(__ldg(r.rel_index + idx)) - r.m_lo, 0), r.m_count - 1);
      float b = 0.0f;
      if (c2p != nullptr) b = __ldg(c2p + static_cast<std::size_t>(row) * r.pitch + m);
      if (p2c != nullptr) b += __ldg(p2c + static_cast<std::size_t>(key) * r.pitch + m);
      s[i][j] = b * p.qscale;
    }
  }
}

template <int D, typename T, bool kRel = false>
__global__ void __launch_bounds__(kThreads, Tile<D>::kMinBlocks) attention_kernel(AttnParams<T> p) {
  using C = Tile<D>;
  constexpr int R = C::kRows, BR = C::kBlockRows, BC = C::kKeys, KJ = C::kKeysPerThread;
  constexpr int VD = C::kVec, NC = C::kChunks;
  constexpr int QS = C::kQStride, KS = C::kKStride, PS = C::kPStride;
  extern __shared__ float4 smem4[];  // float4: 16-byte aligned for the vector accesses
  float* qt = reinterpret_cast<float*>(smem4);  // [D][QS]: scaled queries, transposed
  float* ks = qt + D * QS;                      // [BC][KS]
  float* vs = ks + BC * KS;                     // [BC][D]
  float* pt = vs + BC * D;                      // [BC][PS]: probabilities, transposed

  const int seq = static_cast<int>(blockIdx.x);
  const int head = static_cast<int>(blockIdx.z);
  const int start = p.seq_starts[seq];
  const int len = p.seq_starts[seq + 1] - start;
  const int row0 = static_cast<int>(blockIdx.y) * BR;
  if (row0 >= len) return;  // block-uniform: the grid covers the longest sequence
  // Keys past a sequence's limit are masked tokens: no row reads them (ops/attention.h).
  const int klim = p.key_limits ? min(len, max(p.key_limits[seq], 0)) : len;
  // A prefix-LM mask: under causal, rows also see the sequence's first causal_prefix[s] keys.
  const int cpre = p.causal && p.causal_prefix ? min(len, max(p.causal_prefix[seq], 0)) : 0;
  const int hd = p.head_dim;
  const int kvh = head / p.group;
  const int tid = static_cast<int>(threadIdx.x), tx = tid % kLanes, ty = tid / kLanes;
  // Warp w holds row groups 2w and 2w + 1; a warp whose rows all lie past the end idles.
  const bool active = row0 + (ty & ~1) * R < len;

  // Keys any row of the block may see, [klo, khi); tiles inside [lo_last, hi_first) are seen
  // whole by every row.
  const int last = min(row0 + BR, len) - 1;
  int klo, hi_first, lo_last, khi;
  key_range_prefix(p, row0, len, cpre, klo, hi_first);
  key_range_prefix(p, last, len, cpre, lo_last, khi);
  hi_first = min(hi_first, klim);
  khi = min(khi, klim);

  const T* kbase = p.k + static_cast<std::size_t>(start) * p.ldk + static_cast<std::size_t>(kvh) * hd;
  const T* vbase = p.v + static_cast<std::size_t>(start) * p.ldv + static_cast<std::size_t>(kvh) * hd;
  stage_keys<D>(ks, KS, kbase, p.ldk, klo, khi, hd, p.vec);  // in flight while the queries stage

  // Queries, scaled, transposed to [d][row]. Vector path: a warp reads 8 rows × 4 quads (64-byte
  // row segments) and its transposed stores fall on distinct banks but for a 2-way overlap.
  {
    const T* qbase = p.q + static_cast<std::size_t>(start + row0) * p.ldq + static_cast<std::size_t>(head) * hd;
    const int rows = min(BR, len - row0);
    if (p.vec) {
      constexpr int kQuads = D / 4;
      for (int idx = tid; idx < BR * kQuads; idx += kThreads) {
        const int r = idx % 8 + 8 * (idx / (8 * kQuads)), d = 4 * ((idx / 8) % kQuads);
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (r < rows && d < hd) v = load4(qbase + static_cast<std::size_t>(r) * p.ldq + d);
        qt[(d + 0) * QS + r] = v.x * p.qscale;
        qt[(d + 1) * QS + r] = v.y * p.qscale;
        qt[(d + 2) * QS + r] = v.z * p.qscale;
        qt[(d + 3) * QS + r] = v.w * p.qscale;
      }
    } else {
      for (int idx = tid; idx < BR * D; idx += kThreads) {
        const int r = idx / D, d = idx % D;
        qt[d * QS + r] = r < rows && d < hd ? elem::load(qbase + static_cast<std::size_t>(r) * p.ldq + d) * p.qscale
                                            : 0.0f;
      }
    }
  }

  float m[R], l[R], acc[R][NC * VD];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int c = 0; c < NC * VD; ++c) acc[i][c] = 0.0f;
  }
  const int quads = (hd + 3) / 4;  // the score loop stops at head_dim (the rest is zeros)

  for (int kt = klo; kt < khi; kt += BC) {
    cp_async_wait_all();
    __syncthreads();  // K of this tile (and the queries) in place; V and P of the last tile consumed
    stage_keys<D>(vs, D, vbase, p.ldv, kt, khi, hd, p.vec);  // lands during the scores
    const int nk = min(BC, khi - kt);

    if (active) {
      // S = Q·Kᵀ for the thread's R rows × KJ keys, summed over d in order.
      float s[R][KJ];
      if constexpr (kRel) {
        relative_bias_f32<R, KJ>(p, s, head, start, len, row0, kt, ty, tx);  // q·k accumulates on top
      } else {
#pragma unroll
        for (int i = 0; i < R; ++i)
#pragma unroll
          for (int j = 0; j < KJ; ++j) s[i][j] = 0.0f;
      }
      const float* kp = ks + tx * KS;
      const float* qp = qt + ty * R;
#pragma unroll 4
      for (int d4 = 0; d4 < quads; ++d4) {
        float kv[KJ][4];
#pragma unroll
        for (int j = 0; j < KJ; ++j) to_array(*reinterpret_cast<const float4*>(kp + j * kLanes * KS + 4 * d4), kv[j]);
#pragma unroll
        for (int dd = 0; dd < 4; ++dd) {
          float q[R];
#pragma unroll
          for (int i4 = 0; i4 < R / 4; ++i4)
            to_array(*reinterpret_cast<const float4*>(qp + (4 * d4 + dd) * QS + 4 * i4), q + 4 * i4);
#pragma unroll
          for (int i = 0; i < R; ++i)
#pragma unroll
            for (int j = 0; j < KJ; ++j) s[i][j] = fmaf(q[i], kv[j][dd], s[i][j]);
        }
      }

      if (!(kt >= lo_last && kt + BC <= hi_first)) {  // a tile some row sees only in part
#pragma unroll
        for (int i = 0; i < R; ++i) {
          const int row = row0 + ty * R + i;
          int lo = 0, hi = 0;  // rows past the end see nothing
          if (row < len) {
            key_range_prefix(p, row, len, cpre, lo, hi);
            hi = min(hi, klim);
          }
#pragma unroll
          for (int j = 0; j < KJ; ++j) {
            const int key = kt + tx + kLanes * j;
            if (key < lo || key >= hi) s[i][j] = -INFINITY;
          }
        }
      }

      // Online softmax per row: the new max over the half warp, the old state rescaled. A row
      // with no key yet keeps m = −inf; it then subtracts 0 so that every exp2f is of −inf (0),
      // never of NaN.
#pragma unroll
      for (int i = 0; i < R; ++i) {
        float mx = s[i][0];
#pragma unroll
        for (int j = 1; j < KJ; ++j) mx = fmaxf(mx, s[i][j]);
#pragma unroll
        for (int o = 1; o < kLanes; o *= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        const float m_new = fmaxf(m[i], mx);
        const float m_use = m_new == -INFINITY ? 0.0f : m_new;
        const float corr = exp2f(m[i] - m_use);  // 0 on the row's first keys (m = −inf)
        m[i] = m_new;
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < KJ; ++j) {
          s[i][j] = exp2f(s[i][j] - m_use);
          sum += s[i][j];
        }
        l[i] = l[i] * corr + sum;
#pragma unroll
        for (int c = 0; c < NC * VD; ++c) acc[i][c] *= corr;
      }
#pragma unroll
      for (int j = 0; j < KJ; ++j)
#pragma unroll
        for (int i4 = 0; i4 < R / 4; ++i4)
          *reinterpret_cast<float4*>(pt + (tx + kLanes * j) * PS + ty * R + 4 * i4) =
              make_float4(s[4 * i4][j], s[4 * i4 + 1][j], s[4 * i4 + 2][j], s[4 * i4 + 3][j]);
    }

    cp_async_wait_all();
    __syncthreads();  // V of this tile and P in place; every warp is done with this K
    if (kt + BC < khi) stage_keys<D>(ks, KS, kbase, p.ldk, kt + BC, khi, hd, p.vec);  // lands during P·V

    if (active) {
      // O += P·V over the tile's keys, 16 at a time up to the last valid one (the probabilities
      // and values past it are zeros).
      const float* pp = pt + ty * R;
      const float* vp = vs + tx * VD;
      for (int j0 = 0; j0 < nk; j0 += kLanes) {
#pragma unroll
        for (int jj = 0; jj < kLanes; ++jj) {
          const int j = j0 + jj;
          float pr[R];
#pragma unroll
          for (int i4 = 0; i4 < R / 4; ++i4)
            to_array(*reinterpret_cast<const float4*>(pp + j * PS + 4 * i4), pr + 4 * i4);
#pragma unroll
          for (int c = 0; c < NC; ++c) {
            float vv[VD];
            if constexpr (VD == 4) {
              to_array(*reinterpret_cast<const float4*>(vp + j * D + c * kLanes * VD), vv);
            } else {
              const float2 v2 = *reinterpret_cast<const float2*>(vp + j * D + c * kLanes * VD);
              vv[0] = v2.x;
              vv[1] = v2.y;
            }
#pragma unroll
            for (int i = 0; i < R; ++i)
#pragma unroll
              for (int e = 0; e < VD; ++e) acc[i][c * VD + e] = fmaf(pr[i], vv[e], acc[i][c * VD + e]);
          }
        }
      }
    }
  }

  if (!active) return;
#pragma unroll
  for (int i = 0; i < R; ++i) {
    float sum = l[i];
#pragma unroll
    for (int o = 1; o < kLanes; o *= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const int row = row0 + ty * R + i;
    if (row >= len) continue;
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;  // no admissible key: zeros, as the CPU op
    T* out = p.out + static_cast<std::size_t>(start + row) * p.ldo + static_cast<std::size_t>(head) * hd;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      const int d = c * kLanes * VD + tx * VD;
      if constexpr (VD == 4) {
        if (p.vec) {
          if (d < hd)
            store4(out + d, make_float4(acc[i][c * VD] * inv, acc[i][c * VD + 1] * inv, acc[i][c * VD + 2] * inv,
                                        acc[i][c * VD + 3] * inv));
          continue;
        }
      }
#pragma unroll
      for (int e = 0; e < VD; ++e)
        if (d + e < hd) elem::store(out + d + e, acc[i][c * VD + e] * inv);
    }
  }
}

template <typename T>
bool aligned4(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr) % (4 * sizeof(T)) == 0;
}

template <int D, typename T, bool kRel = false>
void launch(const AttnParams<T>& p, std::size_t num_seqs, std::size_t max_len, std::size_t heads,
            cudaStream_t stream) {
  constexpr std::size_t kBytes = Tile<D>::kSmemFloats * sizeof(float);
  constexpr std::size_t kBlockRows = Tile<D>::kBlockRows;
  check((max_len + kBlockRows - 1) / kBlockRows <= 65535, "attention: sequence of ", max_len,
        " tokens too long for one launch");
  // Above 48 KiB a kernel must opt in; the attribute is per function and cheap to set again.
  IL_CUDA_CHECK(cudaFuncSetAttribute(attention_kernel<D, T, kRel>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(kBytes)));
  const dim3 grid(static_cast<unsigned>(num_seqs), static_cast<unsigned>((max_len + kBlockRows - 1) / kBlockRows),
                  static_cast<unsigned>(heads));
  attention_kernel<D, T, kRel><<<grid, kThreads, kBytes, stream>>>(p);
  IL_CUDA_CHECK_LAUNCH();
}

template <typename T>
AttnParams<T> params_of(const AttentionCudaArgs& a, bool vec) {
  AttnParams<T> p{};
  p.q = static_cast<const T*>(a.q);
  p.ldq = a.ldq;
  p.k = static_cast<const T*>(a.k);
  p.ldk = a.ldk;
  p.v = static_cast<const T*>(a.v);
  p.ldv = a.ldv;
  p.out = static_cast<T*>(a.out);
  p.ldo = a.ldo;
  p.seq_starts = a.seq_starts;
  p.group = static_cast<int>(a.heads / a.kv_heads);
  p.head_dim = static_cast<int>(a.head_dim);
  p.qscale = a.scale * kLog2e;
  p.causal = a.mask == MaskMode::kCausal;
  p.half_window = a.window > 0 ? static_cast<int>(a.window / 2) : -1;
  p.vec = vec;
  p.key_limits = a.key_limits;
  p.causal_prefix = a.causal_prefix;
  return p;
}

// 4-element vectors (16 bytes in f32, 8 in f16 / bf16) need every row of every head to start on
// such a boundary: aligned bases, and strides and head_dim in whole vectors.
template <typename T>
bool vectors_fit(const AttentionCudaArgs& a) {
  return a.head_dim % 4 == 0 && a.ldq % 4 == 0 && a.ldk % 4 == 0 && a.ldv % 4 == 0 && a.ldo % 4 == 0 &&
         aligned4<T>(a.q) && aligned4<T>(a.k) && aligned4<T>(a.v) && aligned4<T>(a.out);
}

}  // namespace

void attention_relative_f32_cuda(const AttentionCudaArgs& a, const RelativeBiasF32& r, cudaStream_t stream) {
  const std::size_t max_seq_len = a.max_seq_len;
  check(a.type == DType::kF32 && a.heads == a.kv_heads && a.mask == MaskMode::kBidirectional && a.window == 0 &&
            a.key_limits == nullptr && a.causal_prefix == nullptr && a.queries == AttentionQueries::kAll,
        "attention (relative, f32): f32, bidirectional, unwindowed, one kv head per head only");
  check(a.head_dim >= 1 && a.head_dim <= 128, "attention (relative, f32): head_dim ", a.head_dim, " outside 1..128");
  check(r.rel_index != nullptr && (r.c2p != nullptr || r.p2c != nullptr) && r.pitch > 0 && r.max_len >= 1 &&
            r.m_count >= 1 && r.m_count <= r.pitch,
        "attention (relative, f32): bad relative tables");
  check(a.heads <= 65535 && a.num_seqs < (1u << 31) && max_seq_len < (1u << 30),
        "attention (relative, f32): batch too large for one launch");
  if (a.num_seqs == 0 || max_seq_len == 0) return;
  AttnParams<float> p = params_of<float>(a, vectors_fit<float>(a));
  p.rel = r;
  if (a.head_dim <= 32) return launch<32, float, true>(p, a.num_seqs, max_seq_len, a.heads, stream);
  if (a.head_dim <= 64) return launch<64, float, true>(p, a.num_seqs, max_seq_len, a.heads, stream);
  launch<128, float, true>(p, a.num_seqs, max_seq_len, a.heads, stream);
}

void attention_cuda(const AttentionCudaArgs& a, cudaStream_t stream) {
  const std::size_t max_seq_len = a.max_seq_len;
  // check_attention reads seq_starts, which live on the device here: the shape checks only.
  check_attention_shape(a, kAttentionMaxHeadDim, "attention (CUDA)");
  check(a.heads <= 65535 && a.num_seqs < (1u << 31) && max_seq_len < (1u << 30),
        "attention: batch too large for one launch");
  if (a.num_seqs == 0 || max_seq_len == 0) return;
  elem::dispatch(a.type, [&](auto tag) {
    using T = decltype(tag);
    const bool vec = vectors_fit<T>(a);
    const AttnParams<T> p = params_of<T>(a, vec);
    if (a.head_dim <= 32) return launch<32>(p, a.num_seqs, max_seq_len, a.heads, stream);
    if (a.head_dim <= 64) return launch<64>(p, a.num_seqs, max_seq_len, a.heads, stream);
    if (a.head_dim <= 128) return launch<128>(p, a.num_seqs, max_seq_len, a.heads, stream);
    return launch<256>(p, a.num_seqs, max_seq_len, a.heads, stream);
  });
}

}  // namespace il::ops
