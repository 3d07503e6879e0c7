// The mixture of experts on the GPU (ops/moe.h), every step on the device and every launch size
// fixed by the host-known shape (rows, experts, top_k, inner, cols), so the whole op can be
// captured in a CUDA graph and replayed with other routing:
//
//   router_cuda   per token: logits over the experts (f32), softmax, top-k (ties: the lower
//                 index, as the CPU op), renormalised unless asked not to, times the per-expert
//                 scale and the common scale.
//   moe_cuda      1. sort: one block counts the (token, slot) pairs per expert and takes prefix
//                    sums (row offsets, and row-tile offsets of kTileM rows); then one block an
//                    expert places that expert's pairs in pair order (a stable counting sort:
//                    pair_of_sorted, and the inverse sorted_of_pair).
//                 2. gate_up: a grouped GEMM. CTA (row tile, column tile) finds its expert from
//                    the device tile offsets; tiles past the last expert's exit at once, so no
//                    block ever runs for an expert without rows. The A rows are the tokens'
//                    rows of x, gathered as they are loaded (no copy of x). Each CTA computes the
//                    gate and the up columns of one column range together and writes
//                    act(g) ⊙ u, rounded to x's type: the 2·inner intermediate never exists.
//                 3. down: the same grouped GEMM over the GLU rows, f32 out, per sorted pair.
//                 4. combine: out[t] = Σ_j weights[t, j] · y[pair (t, j)], j in slot order, f32,
//                    rounded once to out's type. Every step is deterministic (integer counts
//                    only, no floating-point atomics): a replay gives the same bits.
//
// The GEMMs: f16 / bf16 on the tensor cores (mma.sync m16n8k16, f32 accumulators) with a
// three-stage cp.async pipeline; f32 on an FMA tile (the parity path). A CTA streams each
// weight tile it needs once for its kTileM rows: at 256 tokens × top-8 over 128 experts (about
// 16 rows an expert) every expert's weights are read once per step; the row tiles of one expert
// and one column tile are adjacent in the grid, so with more rows their weight reads meet in L2.
//
// ids outside 0..experts − 1 (which the CPU op rejects; a device op cannot throw) contribute
// nothing to their token's sum.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "ops/activation_cuda.cuh"
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/mma_cuda.cuh"
#include "ops/moe.h"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

// ---------------------------------------------------------------------------------------------
// Router

constexpr int kRouterTokens = 2;     // tokens per block: 128 blocks at a 256-token canvas
constexpr int kRouterGroup = 4;      // experts a warp sums at once
constexpr int kRouterChunk = 512;    // columns of x staged in shared memory at a time
constexpr int kRouterThreads = 256;  // 8 warps; warp w takes experts 4w … 4w + 3, then 32 on
constexpr std::size_t kRouterMaxExperts = 1024;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The better of two (probability, index) candidates: the larger probability, on a tie the lower
// index (torch.topk's order, and the CPU op's).
__device__ __forceinline__ bool better(float p, int i, float bp, int bi) { return p > bp || (p == bp && i < bi); }

template <typename T>
__global__ void __launch_bounds__(kRouterThreads) router_kernel(RouterArgs a, const T* x) {
  extern __shared__ float router_smem[];
  float* xs = router_smem;                                   // [kRouterTokens][kRouterChunk]
  float* logits = router_smem + kRouterTokens * kRouterChunk;  // [kRouterTokens][experts]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int experts = static_cast<int>(a.experts), cols = static_cast<int>(a.cols);
  const std::size_t r0 = static_cast<std::size_t>(blockIdx.x) * kRouterTokens;
  for (int i = threadIdx.x; i < kRouterTokens * experts; i += blockDim.x) logits[i] = 0.0f;
  for (int c0 = 0; c0 < cols; c0 += kRouterChunk) {
    const int n = min(kRouterChunk, cols - c0);
    __syncthreads();  // the previous chunk's readers are done (and the zeroed logits are visible)
    for (int i = threadIdx.x; i < kRouterTokens * kRouterChunk; i += blockDim.x) {
      const int t = i / kRouterChunk, c = i % kRouterChunk;
      const std::size_t r = r0 + t;
      xs[i] = r < a.rows && c < n ? elem::load(x + r * a.x.ld + c0 + c) : 0.0f;
    }
    __syncthreads();
    // A warp takes kRouterGroup experts at once, several column steps unrolled: their weight
    // loads are independent, so many are in flight (one expert at a time left each warp waiting
    // on one load per step: 0.5 ms a layer at 256 tokens). Each expert's sum keeps its order:
    // lane-strided partial sums, then the butterfly.
    for (int e0 = warp * kRouterGroup; e0 < experts; e0 += kRouterThreads / 32 * kRouterGroup) {
      const float* w[kRouterGroup];
#pragma unroll
      for (int q = 0; q < kRouterGroup; ++q)
        w[q] = a.w + static_cast<std::size_t>(min(e0 + q, experts - 1)) * a.cols + c0;
      float acc[kRouterGroup][kRouterTokens] = {};
#pragma unroll 4
      for (int c = lane; c < n; c += 32) {
        float wv[kRouterGroup];
#pragma unroll
        for (int q = 0; q < kRouterGroup; ++q) wv[q] = w[q][c];
#pragma unroll
        for (int t = 0; t < kRouterTokens; ++t) {
          const float xv = xs[t * kRouterChunk + c];
#pragma unroll
          for (int q = 0; q < kRouterGroup; ++q) acc[q][t] = fmaf(wv[q], xv, acc[q][t]);
        }
      }
#pragma unroll
      for (int q = 0; q < kRouterGroup; ++q)
#pragma unroll
        for (int t = 0; t < kRouterTokens; ++t) {
          const float s = warp_sum(acc[q][t]);
          if (lane == 0 && e0 + q < experts) logits[t * experts + e0 + q] += s;  // only this warp touches e0 + q
        }
    }
  }
  __syncthreads();
  // Softmax and top-k: warp t takes token t.
  if (warp >= kRouterTokens) return;
  const std::size_t r = r0 + warp;
  if (r >= a.rows) return;
  float* p = logits + warp * experts;
  float mx = -INFINITY;
  for (int e = lane; e < experts; e += 32) mx = fmaxf(mx, p[e]);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  float sum = 0.0f;
  for (int e = lane; e < experts; e += 32) {
    const float v = expf(p[e] - mx);
    p[e] = v;
    sum += v;
  }
  sum = warp_sum(sum);
  for (int e = lane; e < experts; e += 32) p[e] /= sum;
  __syncwarp();
  // k rounds of a warp argmax; a chosen expert's probability becomes −1 (probabilities are ≥ 0).
  // Lane 0 keeps the chosen (index, probability) in order in the output rows, then renormalises.
  float chosen = 0.0f;
  for (std::size_t j = 0; j < a.top_k; ++j) {
    float bp = -2.0f;
    int bi = experts;
    for (int e = lane; e < experts; e += 32)
      if (better(p[e], e, bp, bi)) bp = p[e], bi = e;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float op = __shfl_xor_sync(0xffffffffu, bp, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (better(op, oi, bp, bi)) bp = op, bi = oi;
    }
    if (lane == 0) {
      a.ids[r * a.ld_ids + j] = bi;
      a.weights[r * a.ld_weights + j] = bp;
      p[bi] = -1.0f;
    }
    chosen += bp;  // every lane holds the same bp: the sum in slot order, as the CPU op
    __syncwarp();
  }
  if (!a.renormalize) chosen = 1.0f;
  if (lane == 0) {
    for (std::size_t j = 0; j < a.top_k; ++j) {
      const int e = a.ids[r * a.ld_ids + j];
      float& w = a.weights[r * a.ld_weights + j];
      w = w / chosen * (a.expert_scale ? a.expert_scale[e] : 1.0f) * a.scale;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Sorting the pairs by expert

constexpr int kTileM = 64;  // rows of one GEMM tile (both GEMMs, f32 and half: one tile table)
constexpr int kSortThreads = 1024;
constexpr std::size_t kMaxExperts = 4096;  // the count block's counters live in shared memory

// The workspace's regions (moe_workspace_bytes sizes the same list): pair_of_sorted[P],
// sorted_of_pair[P], row offsets[E + 1], tile offsets[E + 1], the GLU rows [P, ld_h] in x's
// type and the down rows [P, out_cols] in f32.
struct Workspace {
  int32_t* pair_of_sorted;
  int32_t* sorted_of_pair;
  int32_t* offsets;
  int32_t* tile_offsets;
  void* h;
  float* y;
  std::size_t ld_h;
  std::size_t bytes;
};

// The GLU rows' stride: rounded up to 8 elements so that the down GEMM's A rows are always
// 16-byte aligned (its cp.async path), whatever `inner` is.
std::size_t glu_ld(std::size_t inner) { return (inner + 7) / 8 * 8; }

Workspace carve(const MoeArgs& a, std::size_t elem_bytes) {
  const auto up = [](std::size_t b) { return (b + 255) / 256 * 256; };
  const std::size_t pairs = a.rows * a.top_k, ld_h = glu_ld(a.inner);
  auto* base = static_cast<char*>(a.workspace);
  Workspace w{};
  std::size_t at = 0;
  const auto take = [&](std::size_t bytes) {
    char* p = base + at;
    at += up(bytes);
    return p;
  };
  w.pair_of_sorted = reinterpret_cast<int32_t*>(take(pairs * sizeof(int32_t)));
  w.sorted_of_pair = reinterpret_cast<int32_t*>(take(pairs * sizeof(int32_t)));
  w.offsets = reinterpret_cast<int32_t*>(take((a.experts + 1) * sizeof(int32_t)));
  w.tile_offsets = reinterpret_cast<int32_t*>(take((a.experts + 1) * sizeof(int32_t)));
  w.h = take(pairs * ld_h * elem_bytes);
  w.y = reinterpret_cast<float*>(take(pairs * a.out_cols * sizeof(float)));
  w.ld_h = ld_h;
  w.bytes = at;
  return w;
}

// One block: the pairs per expert, then (one thread; experts ≤ kMaxExperts) the row offsets and
// the row-tile offsets of every expert. Pairs with an id outside 0..experts − 1 are marked as
// belonging to no row (sorted_of_pair −1).
__global__ void __launch_bounds__(kSortThreads)
    count_pairs_kernel(const int32_t* ids, std::size_t ld_ids, int rows, int top_k, int experts, Workspace w) {
  extern __shared__ int32_t count[];  // [experts]
  const int pairs = rows * top_k;
  for (int e = threadIdx.x; e < experts; e += blockDim.x) count[e] = 0;
  __syncthreads();
  for (int p = threadIdx.x; p < pairs; p += blockDim.x) {
    const int e = ids[static_cast<std::size_t>(p / top_k) * ld_ids + p % top_k];
    if (e >= 0 && e < experts) {
      atomicAdd(&count[e], 1);
    } else {
      w.sorted_of_pair[p] = -1;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int rows_before = 0, tiles_before = 0;
    for (int e = 0; e < experts; ++e) {
      w.offsets[e] = rows_before;
      w.tile_offsets[e] = tiles_before;
      rows_before += count[e];
      tiles_before += (count[e] + kTileM - 1) / kTileM;
    }
    w.offsets[experts] = rows_before;
    w.tile_offsets[experts] = tiles_before;
  }
}

// Block e: expert e's pairs in pair order (a stable counting sort, so the sorted order, and
// everything after it, is the same on every run). The block walks the pairs 1,024 at a time:
// each thread's place is the pairs of e before it in its warp (a ballot) and in the warps before
// (their counts in shared memory), after those of the earlier rounds.
__global__ void __launch_bounds__(kSortThreads)
    scatter_pairs_kernel(const int32_t* ids, std::size_t ld_ids, int rows, int top_k, Workspace w) {
  constexpr int kWarps = kSortThreads / 32;
  __shared__ int warp_counts[kWarps];
  const int e = blockIdx.x, end = w.offsets[e + 1];
  int before = w.offsets[e];  // the same in every thread
  const int pairs = rows * top_k, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int base = 0; base < pairs && before < end; base += kSortThreads) {
    const int p = base + static_cast<int>(threadIdx.x);
    const bool mine = p < pairs && ids[static_cast<std::size_t>(p / top_k) * ld_ids + p % top_k] == e;
    const unsigned ballot = __ballot_sync(0xffffffffu, mine);
    if (lane == 0) warp_counts[warp] = __popc(ballot);
    __syncthreads();
    int at = before, total = 0;
    for (int i = 0; i < kWarps; ++i) {
      const int c = warp_counts[i];
      if (i < warp) at += c;
      total += c;
    }
    if (mine) {
      const int s = at + __popc(ballot & ((1u << lane) - 1u));
      w.pair_of_sorted[s] = p;
      w.sorted_of_pair[p] = s;
    }
    before += total;
    __syncthreads();  // the counts are read before the next round writes them
  }
}

// ---------------------------------------------------------------------------------------------
// The grouped GEMM: out rows [offsets[e], offsets[e + 1]) of expert e = A rows · W[e]ᵀ.

// One GEMM's operands. A row s (a sorted pair) is a + (gather ? pair_of_sorted[s] / top_k : s) ·
// lda. W[e] is w + e · w_expert, rows of k elements; with glu the CTA computes output columns
// [n0, n0 + tile) from W rows n (gate) and inner + n (up) and stores act(g) · u.
struct GroupedGemm {
  const void* a;
  std::size_t lda;
  const int32_t* pair_of_sorted;  // null: A rows are the sorted rows themselves
  int top_k;
  const void* w;
  std::size_t w_expert;
  int k, n, inner;  // n output columns; inner: the up rows' offset in W (glu)
  void* out;
  std::size_t ldo;
  const int32_t* offsets;
  const int32_t* tile_offsets;
  int experts;
};

// Which expert and row range a CTA's row tile belongs to; false when the tile is past the last.
struct RowTile {
  int expert, row0, rows;  // rows: valid rows of this tile (≤ kTileM), from sorted row row0
};

__device__ __forceinline__ bool find_row_tile(const GroupedGemm& g, int tile, RowTile& rt) {
  if (tile >= g.tile_offsets[g.experts]) return false;
  int lo = 0, hi = g.experts;  // the last e with tile_offsets[e] ≤ tile: non-empty, holds tile
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (g.tile_offsets[mid] <= tile) lo = mid;
    else hi = mid;
  }
  const int first = g.offsets[lo] + (tile - g.tile_offsets[lo]) * kTileM;
  rt = {lo, first, min(kTileM, g.offsets[lo + 1] - first)};
  return true;
}

// --- f16 / bf16: tensor cores -----------------------------------------------------------------

constexpr int kTileN = 64;    // output columns per CTA (glu: 64 gate + 64 up rows of W)
constexpr int kTileK = 32;
constexpr int kStages = 3;
constexpr int kPadK = kTileK + 8;  // shared row stride: 80 bytes, fragment loads conflict-free
constexpr int kMmaThreads = 128;   // 2 × 2 warps of 32 × 32 outputs

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Eight elements of a row from column k into shared memory: cp.async where the row allows whole
// aligned vectors, else element by element with zeros past the row's end (or for a missing row).
__device__ __forceinline__ void load_chunk(uint16_t* dst, const uint16_t* row, int k, int kmax, bool vec) {
  if (row != nullptr && vec && k + 8 <= kmax) {
    cp_async16(dst, row + k);
    return;
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) dst[i] = row != nullptr && k + i < kmax ? row[k + i] : uint16_t{0};
}

template <typename T, bool kGlu, Activation A>
__global__ void __launch_bounds__(kMmaThreads) grouped_gemm_mma_kernel(GroupedGemm g, bool a_vec, bool w_vec) {
  constexpr int kB = kGlu ? 2 : 1;  // W tiles per stage
  __shared__ __align__(16) uint16_t as[kStages][kTileM][kPadK];
  __shared__ __align__(16) uint16_t bs[kStages][kB * kTileN][kPadK];
  RowTile rt;
  if (!find_row_tile(g, blockIdx.x, rt)) return;
  const int n0 = blockIdx.y * kTileN;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / 2, wn = warp % 2, gr = lane / 4, tq = lane % 4;

  // The rows this thread copies: A rows tid / 4 and tid / 4 + 32; W rows tid / 4 + 32 q.
  const uint16_t* a_row[2];
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    const int m = tid / 4 + 32 * q;
    a_row[q] = nullptr;
    if (m < rt.rows) {
      const int s = rt.row0 + m;
      const std::size_t src = g.pair_of_sorted ? static_cast<std::size_t>(g.pair_of_sorted[s] / g.top_k) : s;
      a_row[q] = static_cast<const uint16_t*>(g.a) + src * g.lda;
    }
  }
  const uint16_t* w_e = static_cast<const uint16_t*>(g.w) + static_cast<std::size_t>(rt.expert) * g.w_expert;
  const uint16_t* b_row[2 * kB];
#pragma unroll
  for (int q = 0; q < 2 * kB; ++q) {
    const int nb = tid / 4 + 32 * q;  // 0 … kB·64 − 1
    const int col = n0 + nb % kTileN;
    b_row[q] = col < g.n ? w_e + static_cast<std::size_t>(col + (nb >= kTileN ? g.inner : 0)) * g.k : nullptr;
  }
  const int kc = (tid % 4) * 8;
  const auto load_stage = [&](int stage, int k0) {
#pragma unroll
    for (int q = 0; q < 2; ++q) load_chunk(&as[stage][tid / 4 + 32 * q][kc], a_row[q], k0 + kc, g.k, a_vec);
#pragma unroll
    for (int q = 0; q < 2 * kB; ++q) load_chunk(&bs[stage][tid / 4 + 32 * q][kc], b_row[q], k0 + kc, g.k, w_vec);
  };

  float acc[kB][2][4][4] = {};
  const int ktiles = (g.k + kTileK - 1) / kTileK;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < ktiles) load_stage(s, s * kTileK);
    cp_async_commit();
  }
  // Warps whose rows are all past the tile's valid rows skip the arithmetic (not the copies).
  const bool warp_rows = wm * 32 < rt.rows;
  for (int kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    const int next = kt + kStages - 1;
    if (next < ktiles) load_stage(next % kStages, next * kTileK);
    cp_async_commit();
    const int st = kt % kStages;
    if (!warp_rows) continue;
#pragma unroll
    for (int ks = 0; ks < kTileK; ks += 16) {
      uint32_t af[2][4];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) {
        const int r = wm * 32 + mi * 16 + gr;
        af[mi][0] = *reinterpret_cast<const uint32_t*>(&as[st][r][ks + 2 * tq]);
        af[mi][1] = *reinterpret_cast<const uint32_t*>(&as[st][r + 8][ks + 2 * tq]);
        af[mi][2] = *reinterpret_cast<const uint32_t*>(&as[st][r][ks + 2 * tq + 8]);
        af[mi][3] = *reinterpret_cast<const uint32_t*>(&as[st][r + 8][ks + 2 * tq + 8]);
      }
#pragma unroll
      for (int b = 0; b < kB; ++b)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
          const int c = b * kTileN + wn * 32 + ni * 8 + gr;
          const uint32_t b0 = *reinterpret_cast<const uint32_t*>(&bs[st][c][ks + 2 * tq]);
          const uint32_t b1 = *reinterpret_cast<const uint32_t*>(&bs[st][c][ks + 2 * tq + 8]);
#pragma unroll
          for (int mi = 0; mi < 2; ++mi) tc::mma_m16n8k16<T>(acc[b][mi][ni], af[mi], b0, b1);
        }
    }
  }
  cp_async_wait<0>();  // nothing may be left in flight when the block exits

  // Epilogue: c[0], c[1] row gr, columns 2tq, 2tq + 1; c[2], c[3] row gr + 8.
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int m = wm * 32 + mi * 16 + gr + 8 * half;
      if (m >= rt.rows) continue;
      const std::size_t s = static_cast<std::size_t>(rt.row0 + m);
#pragma unroll
      for (int ni = 0; ni < 4; ++ni)
#pragma unroll
        for (int c2 = 0; c2 < 2; ++c2) {
          const int col = n0 + wn * 32 + ni * 8 + 2 * tq + c2;
          if (col >= g.n) continue;
          const float v = acc[0][mi][ni][2 * half + c2];
          if constexpr (kGlu) {
            const float u = acc[kB - 1][mi][ni][2 * half + c2];
            elem::store(static_cast<T*>(g.out) + s * g.ldo + col, act::activate_for<A, T>(v) * u);
          } else {
            static_cast<float*>(g.out)[s * g.ldo + col] = v;
          }
        }
    }
}

// --- f32: FMA tiles (the parity path) ----------------------------------------------------------

constexpr int kF32TileK = 16;
constexpr int kF32Threads = 256;  // 16 × 16 threads, each 4 × 4 outputs (strided by 16)

template <bool kGlu, Activation A>
__global__ void __launch_bounds__(kF32Threads) grouped_gemm_f32_kernel(GroupedGemm g) {
  constexpr int kB = kGlu ? 2 : 1;
  __shared__ float as[kTileM][kF32TileK + 1];
  __shared__ float bs[kB * kTileN][kF32TileK + 1];
  RowTile rt;
  if (!find_row_tile(g, blockIdx.x, rt)) return;
  const int n0 = blockIdx.y * kTileN;
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const float* w_e = static_cast<const float*>(g.w) + static_cast<std::size_t>(rt.expert) * g.w_expert;
  // This thread's copy rows: A rows tid / 16 + 16 q, W rows tid / 16 + 16 q; column tid % 16.
  const float* a_row[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int m = tid / 16 + 16 * q;
    a_row[q] = nullptr;
    if (m < rt.rows) {
      const int s = rt.row0 + m;
      const std::size_t src = g.pair_of_sorted ? static_cast<std::size_t>(g.pair_of_sorted[s] / g.top_k) : s;
      a_row[q] = static_cast<const float*>(g.a) + src * g.lda;
    }
  }
  const float* b_row[4 * kB];
#pragma unroll
  for (int q = 0; q < 4 * kB; ++q) {
    const int nb = tid / 16 + 16 * q;
    const int col = n0 + nb % kTileN;
    b_row[q] = col < g.n ? w_e + static_cast<std::size_t>(col + (nb >= kTileN ? g.inner : 0)) * g.k : nullptr;
  }
  float acc[kB][4][4] = {};
  for (int k0 = 0; k0 < g.k; k0 += kF32TileK) {
    const int k = k0 + tx;
#pragma unroll
    for (int q = 0; q < 4; ++q) as[ty + 16 * q][tx] = a_row[q] && k < g.k ? a_row[q][k] : 0.0f;
#pragma unroll
    for (int q = 0; q < 4 * kB; ++q) bs[ty + 16 * q][tx] = b_row[q] && k < g.k ? b_row[q][k] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kF32TileK; ++kk) {
      float av[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = as[ty + 16 * i][kk];
#pragma unroll
      for (int b = 0; b < kB; ++b)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float bv = bs[b * kTileN + tx + 16 * j][kk];
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[b][i][j] = fmaf(av[i], bv, acc[b][i][j]);
        }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int m = ty + 16 * i;
    if (m >= rt.rows) continue;
    const std::size_t s = static_cast<std::size_t>(rt.row0 + m);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = n0 + tx + 16 * j;
      if (col >= g.n) continue;
      float v = acc[0][i][j];
      if constexpr (kGlu) v = act::activate<A>(v) * acc[kB - 1][i][j];
      static_cast<float*>(g.out)[s * g.ldo + col] = v;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The weighted combine: one thread per output element, the slots in order.

constexpr int kCombineThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kCombineThreads)
    combine_kernel(const float* y, std::size_t out_cols, const int32_t* sorted_of_pair, const float* weights,
                   std::size_t ld_weights, int top_k, T* out, std::size_t ldo, std::size_t rows) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * out_cols) return;
  const std::size_t t = i / out_cols, c = i % out_cols;
  float acc = 0.0f;
  for (int j = 0; j < top_k; ++j) {
    const int s = sorted_of_pair[t * top_k + j];
    if (s >= 0) acc = fmaf(weights[t * ld_weights + j], y[static_cast<std::size_t>(s) * out_cols + c], acc);
  }
  elem::store(out + t * ldo + c, acc);
}

// ---------------------------------------------------------------------------------------------
// Launchers

template <Activation A, typename T>
void launch_gemms(const MoeArgs& a, const Workspace& w, dim3 grid_up, dim3 grid_down, cudaStream_t stream) {
  GroupedGemm up{};
  up.a = a.x.data;
  up.lda = a.x.ld;
  up.pair_of_sorted = w.pair_of_sorted;
  up.top_k = static_cast<int>(a.top_k);
  up.w = a.gate_up.data;
  up.w_expert = 2 * a.inner * a.cols;
  up.k = static_cast<int>(a.cols);
  up.n = static_cast<int>(a.inner);
  up.inner = static_cast<int>(a.inner);
  up.out = w.h;
  up.ldo = w.ld_h;
  up.offsets = w.offsets;
  up.tile_offsets = w.tile_offsets;
  up.experts = static_cast<int>(a.experts);
  GroupedGemm down = up;
  down.a = w.h;
  down.lda = w.ld_h;
  down.pair_of_sorted = nullptr;
  down.w = a.down.data;
  down.w_expert = a.out_cols * a.inner;
  down.k = static_cast<int>(a.inner);
  down.n = static_cast<int>(a.out_cols);
  down.inner = 0;
  down.out = w.y;
  down.ldo = a.out_cols;
  if constexpr (std::is_same_v<T, float>) {
    grouped_gemm_f32_kernel<true, A><<<grid_up, kF32Threads, 0, stream>>>(up);
    IL_CUDA_CHECK_LAUNCH();
    grouped_gemm_f32_kernel<false, A><<<grid_down, kF32Threads, 0, stream>>>(down);
    IL_CUDA_CHECK_LAUNCH();
  } else {
    // cp.async moves 16-byte vectors: rows must start 16-byte aligned (8 elements).
    const bool x_vec = reinterpret_cast<std::uintptr_t>(a.x.data) % 16 == 0 && a.x.ld % 8 == 0;
    const bool gu_vec = reinterpret_cast<std::uintptr_t>(a.gate_up.data) % 16 == 0 && a.cols % 8 == 0;
    const bool dn_vec = reinterpret_cast<std::uintptr_t>(a.down.data) % 16 == 0 && a.inner % 8 == 0;
    grouped_gemm_mma_kernel<T, true, A><<<grid_up, kMmaThreads, 0, stream>>>(up, x_vec, gu_vec);
    IL_CUDA_CHECK_LAUNCH();
    grouped_gemm_mma_kernel<T, false, A><<<grid_down, kMmaThreads, 0, stream>>>(down, true, dn_vec);
    IL_CUDA_CHECK_LAUNCH();
  }
}

template <typename T>
void launch_act(const MoeArgs& a, const Workspace& w, dim3 grid_up, dim3 grid_down, cudaStream_t stream) {
  switch (a.act) {
    case Activation::kNone: return launch_gemms<Activation::kNone, T>(a, w, grid_up, grid_down, stream);
    case Activation::kGeluErf: return launch_gemms<Activation::kGeluErf, T>(a, w, grid_up, grid_down, stream);
    case Activation::kGeluTanh: return launch_gemms<Activation::kGeluTanh, T>(a, w, grid_up, grid_down, stream);
    case Activation::kSilu: return launch_gemms<Activation::kSilu, T>(a, w, grid_up, grid_down, stream);
    case Activation::kRelu: return launch_gemms<Activation::kRelu, T>(a, w, grid_up, grid_down, stream);
    case Activation::kTanh: return launch_gemms<Activation::kTanh, T>(a, w, grid_up, grid_down, stream);
    case Activation::kQuickGelu: return launch_gemms<Activation::kQuickGelu, T>(a, w, grid_up, grid_down, stream);
  }
  throw Error("moe (CUDA): unknown activation");
}

}  // namespace

void router_cuda(const RouterArgs& a, cudaStream_t stream) {
  check_router(a, "router (CUDA)");
  if (a.rows == 0) return;
  check(a.experts <= kRouterMaxExperts, "router (CUDA): ", a.experts, " experts, more than the ", kRouterMaxExperts,
        " the kernel holds");
  check(a.cols < (std::size_t{1} << 31), "router (CUDA): too many columns");
  const std::size_t blocks = (a.rows + kRouterTokens - 1) / kRouterTokens;
  check(blocks < (std::size_t{1} << 31), "router (CUDA): too many rows for one launch");
  const std::size_t smem = (kRouterTokens * kRouterChunk + kRouterTokens * a.experts) * sizeof(float);
  elem::dispatch(a.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    router_kernel<T><<<static_cast<unsigned>(blocks), kRouterThreads, smem, stream>>>(a, static_cast<const T*>(a.x.data));
  });
  IL_CUDA_CHECK_LAUNCH();
}

void moe_cuda(const MoeArgs& a, cudaStream_t stream) {
  check_moe(a, "moe (CUDA)");
  if (a.rows == 0) return;
  const std::size_t elem_bytes = dtype_size(a.x.dtype);
  check(a.workspace != nullptr && reinterpret_cast<std::uintptr_t>(a.workspace) % 256 == 0, "moe (CUDA): workspace ",
        a.workspace == nullptr ? "missing" : "not 256-byte aligned");
  const Workspace w = carve(a, elem_bytes);
  check(a.workspace_bytes >= w.bytes, "moe (CUDA): workspace of ", a.workspace_bytes, " bytes, ", w.bytes,
        " needed (moe_workspace_bytes)");
  check(a.experts <= kMaxExperts, "moe (CUDA): ", a.experts, " experts, more than the ", kMaxExperts,
        " the sort holds");
  const std::size_t pairs = a.rows * a.top_k;
  check(pairs < (std::size_t{1} << 31) && a.cols < (std::size_t{1} << 31) && a.inner < (std::size_t{1} << 30) &&
            a.out_cols < (std::size_t{1} << 31),
        "moe (CUDA): shape too large for 32-bit row and column indices");
  // Row tiles: each expert's rows round up to whole tiles, at most one partial tile an expert.
  const std::size_t row_tiles = (pairs + kTileM - 1) / kTileM + a.experts;
  const std::size_t up_col_tiles = (a.inner + kTileN - 1) / kTileN, down_col_tiles = (a.out_cols + kTileN - 1) / kTileN;
  check(row_tiles < (std::size_t{1} << 31) && up_col_tiles <= 65535 && down_col_tiles <= 65535,
        "moe (CUDA): too many tiles for one launch");
  const dim3 grid_up(static_cast<unsigned>(row_tiles), static_cast<unsigned>(up_col_tiles));
  const dim3 grid_down(static_cast<unsigned>(row_tiles), static_cast<unsigned>(down_col_tiles));

  count_pairs_kernel<<<1, kSortThreads, a.experts * sizeof(int32_t), stream>>>(
      a.ids, a.ld_ids, static_cast<int>(a.rows), static_cast<int>(a.top_k), static_cast<int>(a.experts), w);
  IL_CUDA_CHECK_LAUNCH();
  scatter_pairs_kernel<<<static_cast<unsigned>(a.experts), kSortThreads, 0, stream>>>(
      a.ids, a.ld_ids, static_cast<int>(a.rows), static_cast<int>(a.top_k), w);
  IL_CUDA_CHECK_LAUNCH();
  const std::size_t total = a.rows * a.out_cols;
  const std::size_t combine_blocks = (total + kCombineThreads - 1) / kCombineThreads;
  check(combine_blocks < (std::size_t{1} << 31), "moe (CUDA): too many outputs for one launch");
  elem::dispatch(a.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_act<T>(a, w, grid_up, grid_down, stream);
    combine_kernel<T><<<static_cast<unsigned>(combine_blocks), kCombineThreads, 0, stream>>>(
        w.y, a.out_cols, w.sorted_of_pair, a.weights, a.ld_weights, static_cast<int>(a.top_k),
        static_cast<T*>(a.out.data), a.out.ld, a.rows);
    IL_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace il::ops
