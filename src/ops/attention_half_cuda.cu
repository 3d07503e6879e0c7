// Ragged flash attention (FlashAttention-2 scheme) for f16 / bf16 activations on tensor cores.
//
// A block owns (sequence, a tile of query rows, head) and has four warps; each warp owns one or
// two m16 tiles of mma.sync.m16n8k16 (16 or 32 query rows: two for head_dim ≤ 64, see kMTiles).
// Keys stream through shared memory 64 at a time in a cp.async pipeline of 2 to 4 tiles, so the
// next tiles load while this one is multiplied. Per key tile a warp computes S = Q·Kᵀ (f32
// accumulators), masks it, updates the running row max of the online softmax in f32, takes the
// exponentials in f32 and rounds P to the element type in registers (the mma accumulator layout
// of S is exactly the A-operand layout P·V needs, so P never touches shared memory), then
// accumulates O += P·V in f32, and the row sums of exactly those rounded P by one more mma
// against a ones operand. Memory is O(tile) whatever the sequence length.
//
// Masks follow ops/attention.h exactly: row i of a sequence of length n sees keys [lo_i, hi_i)
// with hi_i = i + 1 when causal (else n), and with a window w additionally |i − j| ≤ w / 2. Both
// bounds are non-decreasing in i, which gives a block (and a warp) its key range from its first
// and last rows, and tells which tiles need no per-element mask at all.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/env.h"
#include "core/error.h"
#include "ops/attention_dispatch_cuda.h"
#include "ops/attention_half_cuda.h"
#include "ops/attention_mask_cuda.cuh"
#include "ops/attention_tile_cuda.cuh"
#include "ops/attention_wgmma_cuda.h"
#include "ops/check_cuda.h"
#include "ops/launch_cuda.cuh"
#include "ops/mma_cuda.cuh"

namespace il::ops {
namespace {

using namespace attn;  // Elem, fast_exp2, kLog2e, cp.async (ops/attention_tile_cuda.cuh)

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kKeyTile = 64;

struct Params {
  const uint16_t* q;
  std::size_t ldq;
  const uint16_t* k;
  std::size_t ldk;
  const uint16_t* v;
  std::size_t ldv;
  uint16_t* out;
  std::size_t ldo;
  const int32_t* seq_starts;
  int group;         // query heads per kv head
  int head_dim;      // ≤ D of the instantiation; columns head_dim .. D − 1 are zero in shared memory
  float scale_log2;  // scale · log2(e) > 0: the softmax runs on exp2
  bool causal;
  int half_window;   // −1: no window
  bool out_pairs;    // out, ldo and head_dim allow 4-byte stores of two adjacent outputs
  int heads;
  int row_tiles;     // blocks of query rows per (sequence, head): ceil(max_seq_len / rows per block)
  bool seq_major;    // block order: see work_of
  // DeBERTa's relative terms (kRel): the c2p / p2c tables of head 0 (head h at + h·rel_head_stride,
  // row r at + r·rel_pitch; null for an absent term), and m of distance d at rel_index[d + rel_center]
  // minus m_lo, kept inside [0, m_count).
  const float* c2p;
  const float* p2c;
  std::size_t rel_head_stride;
  int rel_pitch;
  const float* rel_index;
  int rel_center;  // max_len − 1
  int m_lo, m_count;
};

// The block's (sequence, head, row tile). Default order: row tile fastest, then head, then
// sequence, all in blockIdx.x, so the blocks running together read the same rows of the fused
// QKV buffer (each head is a 64–256-byte slice of a row: alone, a block's reads are scattered
// single cache lines) and reuse one head's K/V from L2 right away. seq_major: the f32 kernel's
// order (x = sequence, y = row tile, z = head), kept for comparison.
__device__ __forceinline__ void work_of(const Params& p, int& seq, int& head, int& tile) {
  if (p.seq_major) {
    seq = static_cast<int>(blockIdx.x);
    tile = static_cast<int>(blockIdx.y);
    head = static_cast<int>(blockIdx.z);
    return;
  }
  const int x = static_cast<int>(blockIdx.x);
  tile = x % p.row_tiles;
  const int r = x / p.row_tiles;
  head = r % p.heads;
  seq = r / p.heads;
}

// Shared memory rows hold D elements plus 8 of padding: the 16 extra bytes shift consecutive rows
// by four banks, so the eight row addresses of one ldmatrix phase hit eight distinct bank groups.
template <int D>
struct Smem {
  static constexpr int kStride = D + 8;
  static constexpr int kTile = kKeyTile * kStride;  // elements of one K or V tile
  // Q (64 or 128 rows), then `stages` K tiles, then `stages` V tiles.
  static constexpr std::size_t bytes(int q_rows, int stages) {
    return (q_rows * kStride + 2 * stages * kTile) * sizeof(uint16_t);
  }
};

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8×8 b16 matrices; lanes 8m … 8m + 7 give the row addresses of matrix m.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// Stages kRowsN rows of D columns (row r at g + r·ld) into shared memory with stride D + 8;
// rows ≥ valid and columns ≥ hd become zeros, so padding never feeds NaN or garbage into an mma
// (a zero probability times an uninitialised NaN would still be NaN). On the cp.async path a
// thread always moves the same 16-byte column chunk of every (kThreads / chunks)-th row (every
// 32nd, 16th, 8th at head dims 32, 64, 128), so its offset and column test are worked out once
// and each copy costs an add and a compare (per-copy index arithmetic had made the integer pipe
// the kernel's busiest).
template <int D, bool kVec, int kRowsN>
__device__ __forceinline__ void stage(uint16_t* dst, const uint16_t* g, std::size_t ld, int valid, int hd) {
  constexpr int kStride = Smem<D>::kStride;
  constexpr int kChunks = D / 8;  // 16-byte chunks per row; hd is a multiple of 8 on the cp.async path
  if constexpr (kVec && kThreads % kChunks == 0) {
    constexpr int kRowStep = kThreads / kChunks;
    const int r0 = static_cast<int>(threadIdx.x) / kChunks, c = static_cast<int>(threadIdx.x) % kChunks;
    const bool col_ok = c * 8 < hd;
    const uint16_t* src = g + static_cast<std::size_t>(r0) * ld + c * 8;
    const std::size_t src_step = static_cast<std::size_t>(kRowStep) * ld;
    constexpr uint32_t kDstStep = kRowStep * kStride * sizeof(uint16_t);
    uint32_t to = smem_addr(dst + r0 * kStride + c * 8);
    static_assert(kRowsN % kRowStep == 0, "every thread copies the same number of rows");
    if constexpr (D <= 64) {
      // A compile-time count, fully unrolled (H200, kernel alone: head dim 64 3 % faster than the
      // loop below at bge-base 128×256 and 6 % at 32×128; at head dim 128 it measured 5 %
      // slower, so that keeps the loop).
#pragma unroll
      for (int i = 0; i < kRowsN / kRowStep; ++i) {
        const bool ok = col_ok && r0 + i * kRowStep < valid;
        cp_async16(to + i * kDstStep, ok ? src + i * src_step : g, ok);
      }
    } else {
      for (int r = r0; r < kRowsN; r += kRowStep) {
        const bool ok = col_ok && r < valid;
        cp_async16(to, ok ? src : g, ok);
        src += src_step;
        to += kDstStep;
      }
    }
  } else if constexpr (kVec) {  // head dim 96: 12 chunks a row, so a thread's chunk varies
    for (int idx = static_cast<int>(threadIdx.x); idx < kRowsN * kChunks; idx += kThreads) {
      const int r = idx / kChunks, c = idx % kChunks;
      const bool ok = r < valid && c * 8 < hd;
      cp_async16(smem_addr(dst + r * kStride + c * 8), ok ? g + static_cast<std::size_t>(r) * ld + c * 8 : g, ok);
    }
  } else {
    for (int idx = static_cast<int>(threadIdx.x); idx < kRowsN * D; idx += kThreads) {
      const int r = idx / D, d = idx % D;
      dst[r * kStride + d] = r < valid && d < hd ? g[static_cast<std::size_t>(r) * ld + d] : uint16_t{0};
    }
  }
}

// Query rows per warp: kM m16 tiles. Two tiles let every K and V fragment read from shared
// memory feed two mma instead of one, halving the ldmatrix traffic per mma (measured: bge-base
// 128×256 0.149 ms against 0.172 ms); it doubles the S and O registers, so the large head dims
// keep one tile.
template <int D>
constexpr int kMTiles = D <= 64 ? 2 : 1;

// K/V pipeline depth: tiles in shared memory, up to stages − 1 of them loading while one is
// multiplied. Deeper hides more load latency (measured on the H200: 4 stages 2 % faster than 2
// at bge-base 128×256) but costs shared memory, which at head_dim 128 would drop the second
// resident block.
template <int D>
constexpr int kStages = D <= 64 ? 4 : D <= 96 ? 3 : 2;

// The score tile's relative bias (kRel): s[mi][n][e] = c2p[i][m] + p2c[j][m] for the thread's
// fragment element (row i = wr0 + 16 mi + 8 (e >> 1) + g, key j = kt + 8 n + 2 tig + (e & 1);
// mma_cuda.cuh), m the table column of i − j. A thread's distances are base + 8 k − c with
// k = 2 mi + (e >> 1) − n ∈ [−7, 2 kM − 1] and c = e & 1, so 2 (2 kM + 7) columns serve its 64 kM
// elements. Rows and keys past the sequence read its last row (finite values; their scores are
// masked or never stored).
template <int kM>
__device__ __forceinline__ void relative_bias(const Params& p, float (&s)[kM][8][4], int head, int start, int len,
                                              int wr0, int kt, int g, int tig) {
  constexpr int kSpread = 2 * kM + 7;
  const int base = wr0 + g - kt - 2 * tig;
  const int last = 2 * p.rel_center;
  int col[kSpread][2];
#pragma unroll
  for (int k = 0; k < kSpread; ++k)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int d = base + 8 * (k - 7) - c + p.rel_center;
      const int m = static_cast<int>(__ldg(p.rel_index + min(max(d, 0), last))) - p.m_lo;
      col[k][c] = min(max(m, 0), p.m_count - 1);
    }
  const std::size_t head_off = static_cast<std::size_t>(head) * p.rel_head_stride;
  const float* c2p = p.c2p != nullptr ? p.c2p + head_off : nullptr;
  const float* p2c = p.p2c != nullptr ? p.p2c + head_off : nullptr;
  const int end = start + len - 1;
#pragma unroll
  for (int mi = 0; mi < kM; ++mi)
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int hh = e >> 1, c = e & 1;
        const int m = col[2 * mi + hh - n + 7][c];
        const int i = min(start + wr0 + 16 * mi + 8 * hh + g, end);
        const int j = min(start + kt + 8 * n + 2 * tig + c, end);
        float b = 0.0f;
        if (c2p != nullptr) b = __ldg(c2p + i * p.rel_pitch + m);
        if (p2c != nullptr) b += __ldg(p2c + j * p.rel_pitch + m);
        s[mi][n][e] = b;
      }
}

template <int D, int kM, int kS, bool kPairExp, typename T, bool kVec, bool kRel = false>
__global__ void __launch_bounds__(kThreads) attention_half_kernel(Params p) {
  pdl::wait_for_predecessor();
  using S = Smem<D>;
  constexpr int kStride = S::kStride;
  constexpr int kRows = kWarps * 16 * kM;
  constexpr int kDSteps = D / 16;  // k-steps of Q·Kᵀ, and pairs of 8-wide output tiles of P·V
  extern __shared__ uint4 smem_raw[];  // uint4: 16-byte alignment for cp.async and ldmatrix
  uint16_t* qs = reinterpret_cast<uint16_t*>(smem_raw);
  uint16_t* ks = qs + kRows * kStride;
  uint16_t* vs = ks + kS * S::kTile;

  int seq, head, tile;
  work_of(p, seq, head, tile);
  const int start = p.seq_starts[seq];
  const int len = p.seq_starts[seq + 1] - start;
  const int row0 = tile * kRows;
  if (row0 >= len) return;  // block-uniform: the grid covers the longest sequence
  const int hd = p.head_dim;
  const int kvh = head / p.group;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane >> 2, tig = lane & 3;  // mma fragment coordinates: row group, thread in group

  const uint16_t* qg = p.q + static_cast<std::size_t>(start + row0) * p.ldq + static_cast<std::size_t>(head) * hd;
  const uint16_t* kg = p.k + static_cast<std::size_t>(start) * p.ldk + static_cast<std::size_t>(kvh) * hd;
  const uint16_t* vg = p.v + static_cast<std::size_t>(start) * p.ldv + static_cast<std::size_t>(kvh) * hd;

  // Keys any row of the block may see.
  const int last = min(row0 + kRows, len) - 1;
  int klo, khi, unused;
  key_range(p, row0, len, klo, unused);
  key_range(p, last, len, unused, khi);
  const int ntiles = (khi - klo + kKeyTile - 1) / kKeyTile;  // ≥ 1: row0 sees itself

  // The warp's rows and their ranges; a warp past the sequence still loads and synchronises.
  const int wr0 = row0 + warp * 16 * kM;
  const bool warp_active = wr0 < len;
  const int wlast = min(wr0 + 16 * kM, len) - 1;
  int wlo = 0, whi = 0, wlo_last = 0, whi_first = 0;
  if (warp_active) {
    key_range(p, wr0, len, wlo, whi_first);
    key_range(p, wlast, len, wlo_last, whi);
  }
  // This thread's rows: fragment rows g and g + 8 of each m tile, [mi][h] = wr0 + 16 mi + 8 h + g.
  int lo[kM][2], hi[kM][2];
#pragma unroll
  for (int mi = 0; mi < kM; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) key_range(p, wr0 + 16 * mi + 8 * h + g, len, lo[mi][h], hi[mi][h]);

  // Tile u goes to buffer u % kS. Group u of cp.async holds tile u (group 0 also holds Q); a
  // group is committed for every u, empty past the last tile, so counting stays uniform.
  const auto load_tile = [&](int u) {
    if (u < ntiles) {
      const int k0 = klo + u * kKeyTile;
      const int b = u % kS;
      stage<D, kVec, kKeyTile>(ks + b * S::kTile, kg + static_cast<std::size_t>(k0) * p.ldk, p.ldk, len - k0, hd);
      stage<D, kVec, kKeyTile>(vs + b * S::kTile, vg + static_cast<std::size_t>(k0) * p.ldv, p.ldv, len - k0, hd);
    }
    if constexpr (kVec) cp_async_commit();
  };
  stage<D, kVec, kRows>(qs, qg, p.ldq, len - row0, hd);
#pragma unroll
  for (int u = 0; u < kS - 1; ++u) load_tile(u);

  // Q fragments live in registers for the whole key loop with one m tile; with two, the registers
  // go to the doubled S and O and the fragments are re-read from shared memory per key tile (six
  // ldmatrix per sixteen mma instead of four per eight: still half the traffic of one tile).
  constexpr bool kQInRegs = kM == 1;
  uint32_t qf[kQInRegs ? kM : 1][kQInRegs ? kDSteps : 1][4];
  float o[kM][2 * kDSteps][4];
  // Running max (exp2 domain) per row, and the row sums as an mma accumulator: lacc[mi][0 and 1]
  // hold row g's sum, [2 and 3] row g + 8's.
  float m[kM][2], lacc[kM][4];
#pragma unroll
  for (int mi = 0; mi < kM; ++mi) {
#pragma unroll
    for (int n = 0; n < 2 * kDSteps; ++n) o[mi][n][0] = o[mi][n][1] = o[mi][n][2] = o[mi][n][3] = 0.0f;
    m[mi][0] = m[mi][1] = -INFINITY;
    lacc[mi][0] = lacc[mi][1] = lacc[mi][2] = lacc[mi][3] = 0.0f;
  }

  for (int t = 0; t < ntiles; ++t) {
    const int kt = klo + t * kKeyTile;
    // kS − 1 + t groups are committed; at most kS − 2 pending means groups 0 … t are complete.
    if constexpr (kVec) cp_async_wait<kS - 2>();
    // Tile t is visible to all, and every warp is done with tile t − 1, whose buffer the load of
    // tile t + kS − 1 below overwrites.
    __syncthreads();
    // Q as A fragments: matrices (rows 0-7, d 0-7), (rows 8-15, d 0-7), (rows 0-7, d 8-15),
    // (rows 8-15, d 8-15) are a0 … a3.
    const uint16_t* qrow = qs + (warp * 16 * kM + (lane & 7) + ((lane >> 3) & 1) * 8) * kStride + (lane >> 4) * 8;
    if constexpr (kQInRegs) {
      if (t == 0) {
#pragma unroll
        for (int kk = 0; kk < kDSteps; ++kk) ldsm_x4(qf[0][kk], smem_addr(qrow + kk * 16));
      }
    }
    load_tile(t + kS - 1);
    // Warp-uniform: skip tiles none of the warp's rows may see (causal, window).
    if (!warp_active || kt >= whi || kt + kKeyTile <= wlo) continue;

    const uint16_t* kb = ks + (t % kS) * S::kTile;
    const uint16_t* vb = vs + (t % kS) * S::kTile;

    // S = Q·Kᵀ: 8 n-tiles of 8 keys per m tile. ldmatrix.x4 without transpose on K rows
    // (key-major, d contiguous) yields the col-major B operand of two n-tiles: matrices
    // (keys 0-7, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 0-7), (keys 8-15, d 8-15).
    float s[kM][8][4];
    if constexpr (kRel) {
      relative_bias<kM>(p, s, head, start, len, wr0, kt, g, tig);  // q·k accumulates on top
    } else {
#pragma unroll
      for (int mi = 0; mi < kM; ++mi)
#pragma unroll
        for (int n = 0; n < 8; ++n) s[mi][n][0] = s[mi][n][1] = s[mi][n][2] = s[mi][n][3] = 0.0f;
    }
    const uint16_t* krow = kb + ((lane & 7) + (lane >> 4) * 8) * kStride + ((lane >> 3) & 1) * 8;
#pragma unroll
    for (int kk = 0; kk < kDSteps; ++kk) {
      uint32_t qa[kM][4];
#pragma unroll
      for (int mi = 0; mi < kM; ++mi) {
        if constexpr (kQInRegs) {
#pragma unroll
          for (int r = 0; r < 4; ++r) qa[mi][r] = qf[0][kk][r];
        } else {
          ldsm_x4(qa[mi], smem_addr(qrow + mi * 16 * kStride + kk * 16));
        }
      }
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        uint32_t b[4];
        ldsm_x4(b, smem_addr(krow + np * 16 * kStride + kk * 16));
#pragma unroll
        for (int mi = 0; mi < kM; ++mi) {
          Elem<T>::mma(s[mi][2 * np], qa[mi], b[0], b[1]);
          Elem<T>::mma(s[mi][2 * np + 1], qa[mi], b[2], b[3]);
        }
      }
    }

    // Mask (raw scores; −inf stays −inf under the positive scale). A tile inside every warp
    // row's range needs no mask: the test is warp-uniform, and the masking is a loop of its own
    // so that such tiles branch around it rather than run it predicated off.
    const bool need_mask = !(kt >= wlo_last && kt + kKeyTile <= whi_first);
    if (need_mask) {
#pragma unroll
      for (int mi = 0; mi < kM; ++mi)
#pragma unroll
        for (int n = 0; n < 8; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = kt + n * 8 + 2 * tig + (e & 1);
            if (key < lo[mi][e >> 1] || key >= hi[mi][e >> 1]) s[mi][n][e] = -INFINITY;
          }
    }
    uint32_t pf[kM][4][4];  // P as the A fragments of the four k-steps of P·V
#pragma unroll
    for (int mi = 0; mi < kM; ++mi) {
      float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) mx[e >> 1] = fmaxf(mx[e >> 1], s[mi][n][e]);
      float ref[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // A row's four fragment owners are lanes 4g … 4g + 3.
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
        const float mn = fmaxf(m[mi][h], mx[h] * p.scale_log2);  // the max in the exp2 domain
        // A row that has seen no admissible key yet keeps max −inf: subtract 0 instead, so that
        // exp2(−inf − ref) is 0 rather than NaN.
        ref[h] = mn == -INFINITY ? 0.0f : mn;
        const float c = fast_exp2(m[mi][h] - ref[h]);  // 0 while m was −inf
        m[mi][h] = mn;
        lacc[mi][2 * h] *= c;
        lacc[mi][2 * h + 1] *= c;
#pragma unroll
        for (int n = 0; n < 2 * kDSteps; ++n) {
          o[mi][n][2 * h] *= c;
          o[mi][n][2 * h + 1] *= c;
        }
      }
      // p = exp2(s·scale·log2e − ref): one fma per score, then the exponential, rounded to the
      // element type as the A operand P·V needs (the accumulators of n-tiles 2j and 2j + 1 are,
      // in order, the A fragment of k-step j). Default: f32 exponentials, then rounding (the
      // probabilities' only error is that rounding); kPairExp: exponentials of element-type
      // pairs, half the MUFU work but arguments rounded too (measured: no faster, less exact).
#pragma unroll
      for (int n = 0; n < 8; ++n) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float x0 = fmaf(s[mi][n][2 * h], p.scale_log2, -ref[h]);
          const float x1 = fmaf(s[mi][n][2 * h + 1], p.scale_log2, -ref[h]);
          pf[mi][n >> 1][(n & 1) * 2 + h] =
              kPairExp ? Elem<T>::exp2_pair(x0, x1) : Elem<T>::pack(fast_exp2(x0), fast_exp2(x1));
        }
      }
    }

    // O += P·V over four k-steps of 16 keys. ldmatrix.trans on V rows (key-major) yields the B
    // operand: matrices (keys 0-7, d 0-7), (keys 8-15, d 0-7), (keys 0-7, d 8-15), (keys 8-15,
    // d 8-15), i.e. both registers of two output n-tiles. The row sums of the softmax come from
    // the same tensor-core pass: P times a B of ones sums exactly the rounded P that multiplies
    // V, in f32, already reduced over the row's four fragment owners.
    const uint16_t* vrow = vb + ((lane & 7) + ((lane >> 3) & 1) * 8) * kStride + (lane >> 4) * 8;
    const uint32_t ones = Elem<T>::kOnePair;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
#pragma unroll
      for (int mi = 0; mi < kM; ++mi) Elem<T>::mma(lacc[mi], pf[mi][j], ones, ones);
#pragma unroll
      for (int dp = 0; dp < kDSteps; ++dp) {
        uint32_t b[4];
        ldsm_x4_trans(b, smem_addr(vrow + j * 16 * kStride + dp * 16));
#pragma unroll
        for (int mi = 0; mi < kM; ++mi) {
          Elem<T>::mma(o[mi][2 * dp], pf[mi][j], b[0], b[1]);
          Elem<T>::mma(o[mi][2 * dp + 1], pf[mi][j], b[2], b[3]);
        }
      }
    }
  }

  if (!warp_active) return;
#pragma unroll
  for (int mi = 0; mi < kM; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int i = wr0 + 16 * mi + 8 * h + g;
      const float sum = lacc[mi][2 * h];
      if (i >= len) continue;
      // Every real row sees at least itself, so sum > 0; the guard keeps the CPU op's zeros.
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
      uint16_t* out = p.out + static_cast<std::size_t>(start + i) * p.ldo + static_cast<std::size_t>(head) * hd;
#pragma unroll
      for (int n = 0; n < 2 * kDSteps; ++n) {
        const int d = n * 8 + 2 * tig;
        if (d >= hd) continue;
        const float v0 = o[mi][n][2 * h] * inv, v1 = o[mi][n][2 * h + 1] * inv;
        if (p.out_pairs) {  // hd even here, so d + 1 < hd too
          *reinterpret_cast<uint32_t*>(out + d) = Elem<T>::pack(v0, v1);
        } else {
          out[d] = Elem<T>::one(v0);
          if (d + 1 < hd) out[d + 1] = Elem<T>::one(v1);
        }
      }
    }
  }
}

// DeBERTa's relative tables (RelativeScores): block (64 token rows, head, term), four warps of 16
// rows. The rows' q (term c2p) or k (p2c) head slice is staged once; the table rows m_lo + c0 …
// + 63 of the head's pos_key / pos_query columns stream through a second tile, multiplied as the
// attention kernel multiplies Q·Kᵀ, and the f32 accumulators are stored as they are (two adjacent
// columns per store; a quad writes one 32-byte sector).
struct TableParams {
  const uint16_t* x[2];    // per term: q or k, head 0
  std::size_t ldx[2];
  const uint16_t* pos[2];  // per term: pos_key or pos_query, row m_lo, head 0
  std::size_t ld_pos;
  float* out[2];           // per term: table of head 0
  std::size_t head_stride;  // floats per head's table: table_rows · pitch
  int pitch, m_count, head_dim;
  const int32_t* seq_starts;
  int num_seqs;
};

template <int D, typename T>
__global__ void __launch_bounds__(kThreads) relative_tables_kernel(TableParams p) {
  pdl::wait_for_predecessor();
  using S = Smem<D>;
  constexpr int kStride = S::kStride;
  constexpr int kDSteps = D / 16;
  extern __shared__ uint4 smem_raw[];
  uint16_t* xs = reinterpret_cast<uint16_t*>(smem_raw);
  uint16_t* ps = xs + kKeyTile * kStride;
  const int rows = p.seq_starts[p.num_seqs];
  const int r0 = static_cast<int>(blockIdx.x) * kKeyTile;
  if (r0 >= rows) return;  // block-uniform
  const int head = static_cast<int>(blockIdx.y), term = static_cast<int>(blockIdx.z);
  const int hd = p.head_dim;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane >> 2, tig = lane & 3;
  // Selected, not indexed: a parameter array indexed at run time is copied to local memory.
  const bool second = term == 1;
  const uint16_t* pos = (second ? p.pos[1] : p.pos[0]) + static_cast<std::size_t>(head) * hd;
  const std::size_t ldx = second ? p.ldx[1] : p.ldx[0];
  stage<D, true, kKeyTile>(xs, (second ? p.x[1] : p.x[0]) + static_cast<std::size_t>(r0) * ldx + static_cast<std::size_t>(head) * hd,
                           ldx, rows - r0, hd);
  float* out = (second ? p.out[1] : p.out[0]) + static_cast<std::size_t>(head) * p.head_stride;
  const uint16_t* xrow = xs + (warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kStride + (lane >> 4) * 8;
  const uint16_t* prow = ps + ((lane & 7) + (lane >> 4) * 8) * kStride + ((lane >> 3) & 1) * 8;
  for (int c0 = 0; c0 < p.m_count; c0 += kKeyTile) {
    stage<D, true, kKeyTile>(ps, pos + static_cast<std::size_t>(c0) * p.ld_pos, p.ld_pos, p.m_count - c0, hd);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    float acc[8][4];
#pragma unroll
    for (int n = 0; n < 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kDSteps; ++kk) {
      uint32_t a[4];
      ldsm_x4(a, smem_addr(xrow + kk * 16));
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        uint32_t b[4];
        ldsm_x4(b, smem_addr(prow + np * 16 * kStride + kk * 16));
        Elem<T>::mma(acc[2 * np], a, b[0], b[1]);
        Elem<T>::mma(acc[2 * np + 1], a, b[2], b[3]);
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = r0 + warp * 16 + 8 * h + g;
      if (r >= rows) continue;
      float* row = out + static_cast<std::size_t>(r) * p.pitch;
#pragma unroll
      for (int n = 0; n < 8; ++n) {
        const int col = c0 + 8 * n + 2 * tig;  // even, and pitch is a multiple of 8
        if (col < p.pitch) *reinterpret_cast<float2*>(row + col) = make_float2(acc[n][2 * h], acc[n][2 * h + 1]);
      }
    }
    __syncthreads();  // every warp is done with ps before the next chunk overwrites it
  }
}

template <int D, int kM, int kS, bool kPairExp, typename T, bool kVec, bool kRel = false>
void launch_one(Params p, std::size_t num_seqs, std::size_t max_len, std::size_t heads, cudaStream_t stream) {
  constexpr int kRows = kWarps * 16 * kM;
  constexpr std::size_t kBytes = Smem<D>::bytes(kRows, kS);
  const auto kernel = attention_half_kernel<D, kM, kS, kPairExp, T, kVec, kRel>;
  // Above 48 KiB a kernel must opt in; the attribute is per function and cheap to set again
  // (and legal while a graph is being captured: it enqueues nothing).
  IL_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kBytes)));
  const std::size_t row_tiles = (max_len + kRows - 1) / kRows;
  p.row_tiles = static_cast<int>(row_tiles);
  dim3 grid(static_cast<unsigned>(num_seqs), static_cast<unsigned>(row_tiles), static_cast<unsigned>(heads));
  if (!p.seq_major) {
    check(num_seqs * heads * row_tiles < (1u << 31), "attention (half): batch too large for one launch");
    grid = dim3(static_cast<unsigned>(num_seqs * heads * row_tiles), 1, 1);
  }
  pdl::launch(kernel, grid, kThreads, kBytes, stream, p);
}

// Tuning fields 0 / false take the defaults (kMTiles<D>, kStages<D>, f32 exponentials); others
// are honoured where the registers allow them (head_dim ≤ 64, fast path).
template <int D, typename T>
void launch_dim(const Params& p, bool vec, const HalfAttentionTuning& tu, std::size_t num_seqs, std::size_t max_len,
                std::size_t heads, cudaStream_t stream) {
  constexpr int kM = kMTiles<D>, kS = kStages<D>;
  if (!vec) return launch_one<D, kM, kS, false, T, false>(p, num_seqs, max_len, heads, stream);
  if constexpr (D <= 64) {
    const int m = tu.m_tiles == 0 ? kM : tu.m_tiles, st = tu.stages == 0 ? kS : tu.stages;
    if (tu.pair_exp && m == 2 && st == 4) return launch_one<D, 2, 4, true, T, true>(p, num_seqs, max_len, heads, stream);
    if (!tu.pair_exp) {
      if (m == 1 && st == 2) return launch_one<D, 1, 2, false, T, true>(p, num_seqs, max_len, heads, stream);
      if (m == 1 && st == 4) return launch_one<D, 1, 4, false, T, true>(p, num_seqs, max_len, heads, stream);
      if (m == 2 && st == 2) return launch_one<D, 2, 2, false, T, true>(p, num_seqs, max_len, heads, stream);
      if (m == 2 && st == 4) return launch_one<D, 2, 4, false, T, true>(p, num_seqs, max_len, heads, stream);
    }
  }
  launch_one<D, kM, kS, false, T, true>(p, num_seqs, max_len, heads, stream);
}

template <typename T>
void launch_type(const Params& p, bool vec, const HalfAttentionTuning& tu, std::size_t num_seqs, std::size_t max_len,
                 std::size_t heads, cudaStream_t stream) {
  if (p.head_dim <= 32) return launch_dim<32, T>(p, vec, tu, num_seqs, max_len, heads, stream);
  if (p.head_dim <= 64) return launch_dim<64, T>(p, vec, tu, num_seqs, max_len, heads, stream);
  if (p.head_dim <= 96) return launch_dim<96, T>(p, vec, tu, num_seqs, max_len, heads, stream);
  launch_dim<128, T>(p, vec, tu, num_seqs, max_len, heads, stream);
}

bool aligned16(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; }

// The kernel's parameters without relative terms; row_tiles is set by launch_one, which knows
// the rows per block.
Params params_of(const HalfAttentionArgs& a, int half_window, bool seq_major) {
  Params p{};
  p.q = static_cast<const uint16_t*>(a.q);
  p.ldq = a.ldq;
  p.k = static_cast<const uint16_t*>(a.k);
  p.ldk = a.ldk;
  p.v = static_cast<const uint16_t*>(a.v);
  p.ldv = a.ldv;
  p.out = static_cast<uint16_t*>(a.out);
  p.ldo = a.ldo;
  p.seq_starts = a.seq_starts;
  p.group = static_cast<int>(a.heads / a.kv_heads);
  p.head_dim = static_cast<int>(a.head_dim);
  p.scale_log2 = a.scale * kLog2e;
  p.causal = a.mask == MaskMode::kCausal;
  p.half_window = half_window;
  p.out_pairs = reinterpret_cast<std::uintptr_t>(a.out) % 4 == 0 && a.ldo % 2 == 0 && a.head_dim % 2 == 0;
  p.heads = static_cast<int>(a.heads);
  p.seq_major = seq_major;
  return p;
}

int relative_m_tiles() {
  static const int m = env::equals("IL_DISENTANGLED_TC_MTILES", "1") ? 1 : 2;
  return m;
}

template <typename T>
void launch_relative(const Params& p, const TableParams& tp, int terms, std::size_t num_seqs, std::size_t max_len,
                     std::size_t heads, std::size_t table_rows, cudaStream_t stream) {
  const auto run = [&](auto dim) {
    constexpr int D = decltype(dim)::value;
    const auto tables = relative_tables_kernel<D, T>;
    constexpr std::size_t kTableBytes = 2 * kKeyTile * Smem<D>::kStride * sizeof(uint16_t);
    IL_CUDA_CHECK(cudaFuncSetAttribute(tables, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kTableBytes)));
    const dim3 grid(static_cast<unsigned>((table_rows + kKeyTile - 1) / kKeyTile), static_cast<unsigned>(heads),
                    static_cast<unsigned>(terms));
    pdl::launch(tables, grid, kThreads, kTableBytes, stream, tp);
    // Two m tiles a warp as the plain kernel, except where IL_DISENTANGLED_TC_MTILES=1 asks for one
    // (head_dim ≤ 64; measuring: with the bias gathers, two tiles sit at the register limit).
    if constexpr (D <= 64) {
      if (relative_m_tiles() == 1) return launch_one<D, 1, kStages<D>, false, T, true, true>(p, num_seqs, max_len, heads, stream);
    }
    launch_one<D, kMTiles<D>, kStages<D>, false, T, true, true>(p, num_seqs, max_len, heads, stream);
  };
  if (p.head_dim <= 32) return run(std::integral_constant<int, 32>{});
  if (p.head_dim <= 64) return run(std::integral_constant<int, 64>{});
  if (p.head_dim <= 96) return run(std::integral_constant<int, 96>{});
  run(std::integral_constant<int, 128>{});
}

void relative_pass(const HalfAttentionArgs& a, const RelativeScores& r, std::size_t pitch, std::size_t max_seq_len,
                   cudaStream_t stream);

}  // namespace

bool attention_half_relative_supports(const HalfAttentionArgs& a, const RelativeScores& r) {
  const bool terms_ok = (r.pos_key != nullptr || r.pos_query != nullptr) &&
                        (r.pos_key == nullptr || aligned16(r.pos_key)) &&
                        (r.pos_query == nullptr || aligned16(r.pos_query));
  return terms_ok && attention_half_supported(a.head_dim) && a.head_dim % 8 == 0 && aligned16(a.q) &&
         aligned16(a.k) && aligned16(a.v) && a.ldq % 8 == 0 && a.ldk % 8 == 0 && a.ldv % 8 == 0 &&
         r.ld_pos % 8 == 0 && r.tables != nullptr && aligned16(r.tables) && r.rel_index != nullptr;
}

void attention_half_relative_cuda(const HalfAttentionArgs& a, const RelativeScores& r, std::size_t max_seq_len,
                                  cudaStream_t stream) {
  check(a.q && a.k && a.v && a.out && a.seq_starts, "attention (relative): null operand");
  check(a.heads == a.kv_heads && a.mask == MaskMode::kBidirectional && a.window == 0,
        "attention (relative): bidirectional, unwindowed, one kv head per head only");
  check(attention_half_relative_supports(a, r), "attention (relative): unsupported layout (head_dim ", a.head_dim,
        ", strides ", a.ldq, " / ", a.ldk, " / ", a.ldv, ", ", r.ld_pos, ")");
  check(r.table_rows > 0, "attention (relative): no table rows");
  check(a.scale > 0.0f && std::isfinite(a.scale), "attention (relative): scale ", a.scale,
        " must be positive and finite");
  check(r.max_len >= 1 && r.m_lo >= 0 && r.m_count >= 1 && r.m_count <= 32767, "attention (relative): window [",
        r.m_lo, ", +", r.m_count, ") or max_len ", r.max_len, " out of range");
  const int terms = (r.pos_key != nullptr) + (r.pos_query != nullptr);
  const std::size_t pitch = (static_cast<std::size_t>(r.m_count) + 7) / 8 * 8;
  check(r.table_rows * pitch < (1u << 31), "attention (relative): tables of ", r.table_rows, " rows × ", pitch,
        " columns too large");
  // The heads go in passes of as many as the workspace holds tables for (all of them unless the
  // batch is large: the executor caps the workspace, see disentangled_table_cap_floats).
  const std::size_t per_head = static_cast<std::size_t>(terms) * r.table_rows * pitch;
  check(per_head <= r.table_floats, "attention (relative): workspace of ", r.table_floats, " floats, ", per_head,
        " needed for one head");
  check(a.heads <= 65535 && a.num_seqs < (1u << 31) && (r.table_rows + kKeyTile - 1) / kKeyTile < (1u << 31),
        "attention (relative): batch too large for one launch");
  if (a.num_seqs == 0 || max_seq_len == 0) return;
  const std::size_t per_pass = std::min(a.heads, r.table_floats / per_head);
  for (std::size_t h0 = 0; h0 < a.heads; h0 += per_pass) {
    // Heads h0 … h0 + n − 1 are a narrower attention over the same rows: every operand moves
    // h0 heads to the right (16-byte aligned still, head_dim being a multiple of 8).
    const std::size_t n = std::min(per_pass, a.heads - h0), shift = h0 * a.head_dim;
    const auto moved = [&](const void* x) { return x == nullptr ? nullptr : static_cast<const uint16_t*>(x) + shift; };
    HalfAttentionArgs part = a;
    part.q = moved(a.q);
    part.k = moved(a.k);
    part.v = moved(a.v);
    part.out = static_cast<uint16_t*>(a.out) + shift;
    part.heads = part.kv_heads = n;
    RelativeScores rp = r;
    rp.pos_key = moved(r.pos_key);
    rp.pos_query = moved(r.pos_query);
    relative_pass(part, rp, pitch, max_seq_len, stream);
  }
}

namespace {

void relative_pass(const HalfAttentionArgs& a, const RelativeScores& r, std::size_t pitch, std::size_t max_seq_len,
                   cudaStream_t stream) {
  const int terms = (r.pos_key != nullptr) + (r.pos_query != nullptr);
  Params p = params_of(a, -1, false);
  const std::size_t head_stride = r.table_rows * pitch;
  float* c2p = r.tables;
  float* p2c = r.pos_key != nullptr ? r.tables + a.heads * head_stride : r.tables;
  p.c2p = r.pos_key != nullptr ? c2p : nullptr;
  p.p2c = r.pos_query != nullptr ? p2c : nullptr;
  p.rel_head_stride = head_stride;
  p.rel_pitch = static_cast<int>(pitch);
  p.rel_index = r.rel_index;
  p.rel_center = r.max_len - 1;
  p.m_lo = r.m_lo;
  p.m_count = r.m_count;

  TableParams tp{};
  int t = 0;
  const std::size_t off = static_cast<std::size_t>(r.m_lo) * r.ld_pos;
  if (r.pos_key != nullptr) {
    tp.x[t] = static_cast<const uint16_t*>(a.q);
    tp.ldx[t] = a.ldq;
    tp.pos[t] = static_cast<const uint16_t*>(r.pos_key) + off;
    tp.out[t++] = c2p;
  }
  if (r.pos_query != nullptr) {
    tp.x[t] = static_cast<const uint16_t*>(a.k);
    tp.ldx[t] = a.ldk;
    tp.pos[t] = static_cast<const uint16_t*>(r.pos_query) + off;
    tp.out[t++] = p2c;
  }
  tp.ld_pos = r.ld_pos;
  tp.head_stride = head_stride;
  tp.pitch = static_cast<int>(pitch);
  tp.m_count = r.m_count;
  tp.head_dim = static_cast<int>(a.head_dim);
  tp.seq_starts = a.seq_starts;
  tp.num_seqs = static_cast<int>(a.num_seqs);
  if (a.type == HalfType::kF16)
    return launch_relative<__half>(p, tp, terms, a.num_seqs, max_seq_len, a.heads, r.table_rows, stream);
  launch_relative<__nv_bfloat16>(p, tp, terms, a.num_seqs, max_seq_len, a.heads, r.table_rows, stream);
}

}  // namespace

void attention_half_cuda_tuned(const HalfAttentionArgs& a, std::size_t max_seq_len, cudaStream_t stream,
                               const HalfAttentionTuning& tuning) {
  check(tuning.m_tiles >= 0 && tuning.m_tiles <= 2, "attention (half): m_tiles ", tuning.m_tiles, " outside 0..2");
  check(tuning.stages == 0 || tuning.stages == 2 || tuning.stages == 4, "attention (half): stages ", tuning.stages,
        " not 0, 2 or 4");
  check(a.q && a.k && a.v && a.out && a.seq_starts, "attention (half): null operand");
  check(a.heads > 0 && a.kv_heads > 0 && a.heads % a.kv_heads == 0, "attention (half): heads (", a.heads,
        ") must be a multiple of kv_heads (", a.kv_heads, ")");
  check(attention_half_supported(a.head_dim), "attention (half): head_dim ", a.head_dim, " outside 1..",
        kHalfAttentionMaxHeadDim);
  // The row max is taken on raw scores and scaled once, which needs an order-preserving scale.
  check(a.scale > 0.0f && std::isfinite(a.scale), "attention (half): scale ", a.scale, " must be positive and finite");
  check(a.ldq >= a.heads * a.head_dim && a.ldo >= a.heads * a.head_dim && a.ldk >= a.kv_heads * a.head_dim &&
            a.ldv >= a.kv_heads * a.head_dim,
        "attention (half): row stride smaller than heads × head_dim");
  // Limits of the seq_major_grid order (y = row tiles of 64 or more rows, z = heads).
  check(a.heads <= 65535 && a.num_seqs < (1u << 31) && (max_seq_len + 63) / 64 <= 65535,
        "attention (half): batch too large for one launch");
  if (a.num_seqs == 0 || max_seq_len == 0) return;
  // kAuto: the Hopper kernels where the attention dispatch would take them (its supports() and
  // switches, ops/attention_dispatch_cuda.h), else the mma.sync kernel below.
  const bool forced_mma_sync = tuning.kernel == HalfAttentionKernel::kMmaSync || tuning.m_tiles != 0 ||
                               tuning.stages != 0 || tuning.pair_exp || tuning.seq_major_grid;
  const bool automatic = tuning.kernel == HalfAttentionKernel::kAuto && !forced_mma_sync;
  const AttentionKernel choice =
      automatic ? choose_attention_kernel(attention_args_from_half(a, max_seq_len)) : AttentionKernel::kMmaSync;
  if (tuning.kernel == HalfAttentionKernel::kTma || choice == AttentionKernel::kTma)
    return attention_tma_cuda(a, max_seq_len, stream);
  if (tuning.kernel == HalfAttentionKernel::kWgmma || choice == AttentionKernel::kWgmma)
    return attention_wgmma_cuda(a, max_seq_len, stream);
  // A window reaching past the longest sequence masks nothing: dropping it keeps the int index
  // arithmetic (i + half_window + 1) far from overflow.
  const int half_window =
      a.window == 0 || a.window / 2 >= max_seq_len ? -1 : static_cast<int>(a.window / 2);
  const Params p = params_of(a, half_window, tuning.seq_major_grid);
  // cp.async moves 16-byte chunks: every row start of every head must be 16-byte aligned.
  const bool vec = aligned16(a.q) && aligned16(a.k) && aligned16(a.v) && a.ldq % 8 == 0 && a.ldk % 8 == 0 &&
                   a.ldv % 8 == 0 && a.head_dim % 8 == 0;
  if (a.type == HalfType::kF16) return launch_type<__half>(p, vec, tuning, a.num_seqs, max_seq_len, a.heads, stream);
  launch_type<__nv_bfloat16>(p, vec, tuning, a.num_seqs, max_seq_len, a.heads, stream);
}

void attention_half_cuda(const HalfAttentionArgs& a, std::size_t max_seq_len, cudaStream_t stream) {
  attention_half_cuda_tuned(a, max_seq_len, stream, HalfAttentionTuning{});
}

}  // namespace il::ops
