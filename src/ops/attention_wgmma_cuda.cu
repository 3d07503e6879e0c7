// Ragged flash attention for head dim 64 on Hopper's warpgroup MMA (wgmma), f16 / bf16.
//
// Why: the mma.sync kernel (ops/attention_half_cuda.cu) runs bge-base 128×256 at about
// 185 TFLOP/s, 1.76 ms of a 12.8 ms forward, while PyTorch's SDPA (cuDNN's wgmma kernel) takes
// 1.01 ms for the same work (both measured by a kernel trace on the H200, docs/perf-history.md).
// The mma.sync kernel issues an instruction every ~2.6 cycles with 2 warps per scheduler (240
// registers a thread): latency-bound. wgmma multiplies a 64-row tile per instruction from shared
// memory, asynchronously, with far fewer instructions and registers.
//
// How: a block owns (sequence, head, 128 query rows) and has two warpgroups of 64 rows each. All
// 256 threads stage Q and then K / V tiles of 64 keys through a 4-deep cp.async ring, written in
// the 128-byte swizzled layout wgmma reads (16-byte chunk c of row r at c ^ (r % 8)); rows past
// the sequence arrive as zeros, so no other sequence's values (or NaN) can reach a product. Per
// key tile a warpgroup computes S = Q·Kᵀ (four m64n64k16, f32), masks it where the tile is not
// wholly inside every row's key range, runs the online softmax in f32 (the accumulator layout is
// the m16n8 one per warp: row lane / 4 and + 8, columns 2 (lane % 4) and + 1 of each 8), rounds
// P to the element type in registers, which is exactly the register A-operand layout of the next
// product, and accumulates O += P·V (four m64n64k16 with A from registers and V read MN-major)
// and the row sums of the same rounded P (m64n8k16 against a tile of ones). Masks, GQA and
// ragged sequences follow ops/attention.h exactly, as in the mma.sync kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstring>
#include <mutex>

#include "core/error.h"
#include "ops/attention_mask_cuda.cuh"
#include "ops/attention_tile_cuda.cuh"
#include "ops/attention_wgmma_cuda.h"
#include "ops/check_cuda.h"
#include "ops/launch_cuda.cuh"
#include "ops/wgmma_cuda.cuh"

namespace il::ops {
namespace {

using namespace attn;  // Elem, fast_exp2, kLog2e, cp.async (ops/attention_tile_cuda.cuh)

constexpr int kD = 64;                    // head dim: a row of a head is 128 bytes, one swizzle row
constexpr int kKeyTile = 64;              // keys per tile
constexpr int kStages = 4;                // K / V tiles in shared memory
constexpr uint32_t kTileBytes = 64 * 128;  // 64 rows of 64 elements: a K or V tile, a group's Q

constexpr int kGroups = 2;                 // warpgroups per block, 64 query rows each
constexpr int kRows = 64 * kGroups, kThreads = 128 * kGroups;
// Q (one tile per warpgroup), the K ring, the V ring, a 1 KB tile of ones, and the slack that
// aligns the start to the swizzle's 1024 bytes.
constexpr std::size_t kSharedBytes = (kGroups + 2 * kStages) * kTileBytes + 1024 + 1024;

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
  float scale_log2;  // scale · log2(e) > 0
  bool causal;
  int half_window;  // −1: none
  int heads;
  int row_tiles;  // blocks of kRows query rows per (sequence, head)
};

// Keeps registers an asynchronous wgmma still reads (A fragments) from being reused before the
// wait that follows it.
__device__ __forceinline__ void keep_registers(uint32_t (&a)[4][4]) {
#pragma unroll
  for (int c = 0; c < 4; ++c)
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(a[c][i])::"memory");
}

// Staging rows of 64 elements into a swizzled tile: thread tid always moves 16-byte chunk
// tid % 8 of rows tid / 8, + kStep, ... (kStep = threads / 8, a multiple of 8, so all of its rows
// share r % 8 and thus the chunk's swizzled position `to`). Rows from `valid` on become zeros,
// and nothing is read for them.
template <int kRowsN, int kStep>
__device__ __forceinline__ void stage_rows(uint32_t dst, const uint16_t* src, std::size_t pass, const uint16_t* safe,
                                           int valid) {
  static_assert(kRowsN % kStep == 0 && kStep % 8 == 0, "whole passes of whole swizzle rows");
#pragma unroll
  for (int i = 0; i < kRowsN / kStep; ++i) {
    const bool ok = kStep * i < valid;
    cp_async16(dst + i * kStep * 128, ok ? src + i * pass : safe, ok);
  }
}

// Two blocks an SM: 65536 registers leave at most 128 a thread.
template <typename T>
__global__ void __launch_bounds__(kThreads, 2) attention_wgmma_kernel(Params p) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  pdl::wait_for_predecessor();
  extern __shared__ unsigned char shared_raw[];
  const uint32_t base = (sm90::smem_addr(shared_raw) + 1023u) & ~1023u;
  const uint32_t q_s = base, k_s = q_s + kGroups * kTileBytes, v_s = k_s + kStages * kTileBytes;
  const uint32_t ones_s = v_s + kStages * kTileBytes;

  // Row tile fastest, then head, then sequence: blocks running together read the same rows of
  // the fused QKV buffer and share a head's K / V through L2.
  const int x = static_cast<int>(blockIdx.x);
  const int tile = x % p.row_tiles, head = x / p.row_tiles % p.heads, seq = x / p.row_tiles / p.heads;
  const int start = p.seq_starts[seq];
  const int len = p.seq_starts[seq + 1] - start;
  const int row0 = tile * kRows;
  if (row0 >= len) return;  // block-uniform
  const int kvh = head / p.group;
  const int tid = static_cast<int>(threadIdx.x), group = tid / 128, warp = tid % 128 / 32, lane = tid % 32;
  const int g = lane >> 2, tig = lane & 3;

  const uint16_t* qg = p.q + static_cast<std::size_t>(start + row0) * p.ldq + static_cast<std::size_t>(head) * kD;
  const uint16_t* kg = p.k + static_cast<std::size_t>(start) * p.ldk + static_cast<std::size_t>(kvh) * kD;
  const uint16_t* vg = p.v + static_cast<std::size_t>(start) * p.ldv + static_cast<std::size_t>(kvh) * kD;

  // Keys any row of the block may see; the key ranges' bounds are non-decreasing in the row.
  const int last = min(row0 + kRows, len) - 1;
  int klo, khi, unused;
  key_range(p, row0, len, klo, unused);
  key_range(p, last, len, unused, khi);
  const int ntiles = (khi - klo + kKeyTile - 1) / kKeyTile;

  // The warpgroup's rows (a warpgroup past the sequence still stages and synchronises).
  const int wr0 = row0 + 64 * group;
  const RowKeys keys = row_keys(p, wr0, len, warp, g);

  for (int i = tid; i < 256; i += kThreads)
    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(ones_s + 4 * i), "r"(Elem<T>::kOnePair) : "memory");
  // This thread's part of the staging (see stage_rows), its source rows worked out once: the
  // K / V rows of the next tile to stage, advanced a tile per load_tile (called for u = 0, 1, …
  // in order), and how many of that tile's rows (from its first) it may read.
  constexpr int kStep = kThreads / 8;
  const int r0 = tid / 8, col = (tid % 8) * 8;
  const uint32_t to = static_cast<uint32_t>(r0 * 128 + (((tid % 8) ^ (r0 % 8)) << 4));
  const uint16_t* k_next = kg + static_cast<std::size_t>(klo + r0) * p.ldk + col;
  const uint16_t* v_next = vg + static_cast<std::size_t>(klo + r0) * p.ldv + col;
  const std::size_t k_pass = kStep * p.ldk, v_pass = kStep * p.ldv;
  int rows_left = len - klo - r0;
  // Group u of cp.async holds K / V tile u (group 0 also Q); one group per u, empty past the
  // last tile, so the count stays uniform.
  const auto load_tile = [&](int u) {
    if (u < ntiles) {
      const uint32_t b = static_cast<uint32_t>(u % kStages) * kTileBytes + to;
      stage_rows<kKeyTile, kStep>(k_s + b, k_next, k_pass, kg, rows_left);
      stage_rows<kKeyTile, kStep>(v_s + b, v_next, v_pass, vg, rows_left);
      k_next += (kKeyTile / kStep) * k_pass;
      v_next += (kKeyTile / kStep) * v_pass;
      rows_left -= kKeyTile;
    }
    cp_async_commit();
  };
  stage_rows<kRows, kStep>(q_s + to, qg + static_cast<std::size_t>(r0) * p.ldq + col, kStep * p.ldq, qg,
                           len - row0 - r0);
#pragma unroll
  for (int u = 0; u < kStages - 1; ++u) load_tile(u);

  // Descriptors hold the start address / 16 in their low bits (below 2^14 for any shared-memory
  // address), so one moves along a tile by adding the byte offset / 16.
  const uint64_t q_desc = sm90::kmajor_sw128_desc(q_s + group * kTileBytes);
  const uint64_t k_desc = sm90::kmajor_sw128_desc(k_s), v_desc = sm90::mnmajor_sw128_desc(v_s);
  const uint64_t ones_desc = sm90::kmajor_sw128_desc(ones_s);
  float o[32], l[4] = {0.0f, 0.0f, 0.0f, 0.0f}, m[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int i = 0; i < 32; ++i) o[i] = 0.0f;
  float s[32];
  uint32_t pf[4][4];
  const auto visible = [&](int t) {
    const int kt = klo + t * kKeyTile;
    return keys.sees(kt, kKeyTile);  // warpgroup-uniform
  };
  const auto issue_scores = [&](int t) {
    const uint64_t kb = k_desc + (t % kStages) * (kTileBytes >> 4);
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk)  // 16 columns of d: 32 bytes along the rows
      sm90::wgmma_ss_m64n64k16(s, q_desc + kk * 2, kb + kk * 2, kk > 0 ? 1u : 0u, T{});
  };
  const auto issue_values = [&](int t) {
    const uint64_t vb = v_desc + (t % kStages) * (kTileBytes >> 4);
#pragma unroll
    for (int c = 0; c < 4; ++c) {  // 16 keys: 16 rows of 128 bytes
      sm90::wgmma_rs_m64n8k16(l, pf[c], ones_desc, T{});
      sm90::wgmma_rs_m64n64k16_tb(o, pf[c], vb + c * 128, T{});
    }
  };

  // Masks S of tile t, updates the running max, rescales O and the sums, and leaves P in pf.
  const auto softmax = [&](int t) {
    const int kt = klo + t * kKeyTile;
    // s[4j + 2h + e]: row h (g or g + 8), key kt + 8j + 2 tig + e.
    if (!keys.covers(kt, kKeyTile)) mask_scores<8>(s, kt, tig, keys);
    float ref[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float mn = fmaxf(m[h], row_max<8>(s, h) * p.scale_log2);
      ref[h] = mn == -INFINITY ? 0.0f : mn;  // no admissible key yet: exp2(−inf − 0) = 0, not NaN
      const float c = fast_exp2(m[h] - ref[h]);
      m[h] = mn;
      l[2 * h] *= c;
      l[2 * h + 1] *= c;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        o[4 * j + 2 * h] *= c;
        o[4 * j + 2 * h + 1] *= c;
      }
    }
    // P's A fragment of key chunk c (keys 16c … 16c + 15): registers (row g, keys 2 tig),
    // (row g + 8, same), (row g, keys 8 + 2 tig), (row g + 8, same) = s chunks 2c and 2c + 1.
#pragma unroll
    for (int c = 0; c < 4; ++c)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int h = r & 1, e0 = 8 * c + 4 * (r >> 1) + 2 * h;
        pf[c][r] = Elem<T>::pack(fast_exp2(fmaf(s[e0], p.scale_log2, -ref[h])),
                                 fast_exp2(fmaf(s[e0 + 1], p.scale_log2, -ref[h])));
      }
  };
  // Tile t (and Q) have landed for this thread; the fence hands its writes to the async proxy
  // wgmma reads through, and the barrier makes every thread's visible.
  const auto tile_barrier = [&] {
    cp_async_wait<kStages - 2>();
    sm90::fence_shared_for_tma();
    __syncthreads();
  };
  const auto wait_products = [&] {
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    keep_registers(pf);
    sm90::fence_registers(s);
    sm90::fence_registers(o);
    sm90::fence_registers(l);
  };

  for (int t = 0; t < ntiles; ++t) {
    tile_barrier();  // also: every warpgroup is done with tile t − 1, whose buffer is refilled
    load_tile(t + kStages - 1);
    if (!visible(t)) continue;
    sm90::wgmma_fence();
    issue_scores(t);
    wait_products();
    softmax(t);
    sm90::wgmma_fence();
    issue_values(t);
    wait_products();
  }
  cp_async_wait<0>();  // nothing may be in flight into shared memory when the block exits

  if (!keys.active) return;
  const int i = wr0 + 16 * warp + g;  // this thread's first row
  if (i < len)
    store_rows<T>(o, l, p.out + static_cast<std::size_t>(start + i) * p.ldo + static_cast<std::size_t>(head) * kD,
                  p.ldo, len - i, tig);
#else
  (void)p;
  __trap();  // never launched: attention_wgmma_applies requires a compute capability 9.0 device
#endif
}

template <typename T>
void launch(Params p, std::size_t num_seqs, std::size_t heads, std::size_t max_seq_len, cudaStream_t stream) {
  static std::once_flag once;
  std::call_once(once, [] {
    IL_CUDA_CHECK(cudaFuncSetAttribute(attention_wgmma_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(kSharedBytes)));
  });
  const std::size_t row_tiles = (max_seq_len + kRows - 1) / kRows;
  const std::size_t blocks = num_seqs * heads * row_tiles;
  check(blocks < (std::size_t{1} << 31), "attention (wgmma): batch too large for one launch");
  p.row_tiles = static_cast<int>(row_tiles);
  pdl::launch(attention_wgmma_kernel<T>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), kSharedBytes, stream,
              p);
}

bool aligned(const void* ptr, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(ptr) % bytes == 0; }

}  // namespace

bool attention_wgmma_applies(const HalfAttentionArgs& a) {
  if (a.head_dim != kD || a.heads == 0 || a.kv_heads == 0 || a.heads % a.kv_heads != 0) return false;
  if (!aligned(a.q, 16) || !aligned(a.k, 16) || !aligned(a.v, 16) || a.ldq % 8 != 0 || a.ldk % 8 != 0 ||
      a.ldv % 8 != 0)
    return false;
  if (!aligned(a.out, 4) || a.ldo % 2 != 0) return false;
  if (!(a.scale > 0.0f) || !std::isfinite(a.scale)) return false;
  return current_device_is_sm90();
}

void attention_wgmma_cuda(const HalfAttentionArgs& a, std::size_t max_seq_len, cudaStream_t stream) {
  check(a.q && a.k && a.v && a.out && a.seq_starts, "attention (wgmma): null operand");
  check(attention_wgmma_applies(a), "attention (wgmma): head_dim ", a.head_dim,
        ", layout or device it does not handle (it needs head_dim 64, 16-byte aligned rows, sm_90)");
  check(a.ldq >= a.heads * a.head_dim && a.ldo >= a.heads * a.head_dim && a.ldk >= a.kv_heads * a.head_dim &&
            a.ldv >= a.kv_heads * a.head_dim,
        "attention (wgmma): row stride smaller than heads × head_dim");
  if (a.num_seqs == 0 || max_seq_len == 0) return;
  const int half_window = a.window == 0 || a.window / 2 >= max_seq_len ? -1 : static_cast<int>(a.window / 2);
  const Params p{static_cast<const uint16_t*>(a.q),
                 a.ldq,
                 static_cast<const uint16_t*>(a.k),
                 a.ldk,
                 static_cast<const uint16_t*>(a.v),
                 a.ldv,
                 static_cast<uint16_t*>(a.out),
                 a.ldo,
                 a.seq_starts,
                 static_cast<int>(a.heads / a.kv_heads),
                 a.scale * kLog2e,
                 a.mask == MaskMode::kCausal,
                 half_window,
                 static_cast<int>(a.heads),
                 0};  // row_tiles: set by the launch, which knows the rows per block
  // Two warpgroups a block (128 query rows, two blocks an SM): four (a whole 256-token
  // sequence per block, K / V read once) measured slower, 0.140 against 0.118 ms at bge-base
  // 128×256; and issuing P·V of one tile with Q·Kᵀ of the next, 0.129 ms.
  if (a.type == HalfType::kF16) return launch<__half>(p, a.num_seqs, a.heads, max_seq_len, stream);
  launch<__nv_bfloat16>(p, a.num_seqs, a.heads, max_seq_len, stream);
}

}  // namespace il::ops
