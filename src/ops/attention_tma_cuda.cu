// Ragged flash attention for head dim 64 on Hopper, warp-specialised: a producer warpgroup feeds
// Q, K and V by TMA, two consumer warpgroups run Q·Kᵀ and P·V on wgmma. f16 / bf16.
//
// Why: the first wgmma kernel (ops/attention_wgmma_cuda.cu) runs bge-base 128×256 in about
// 0.117 ms, cuDNN's (PyTorch's SDPA) in 0.084. Both issue instructions at the same rate; cuDNN
// executes a third fewer (Nsight Compute, docs/perf-history.md). Ours spends them on every thread
// staging K / V with cp.async, a block-wide barrier per 64-key tile, and a max / rescale / shuffle
// round per 64 keys, and a warpgroup's tensor cores wait while it runs its softmax.
//
// How (sm_90a only; used on compute capability 9.0 devices):
// - persistent: one block an SM walks the work items (sequence, head, 128 query rows), row tile
//   fastest, then head, then sequence;
// - warpgroup 2 is the producer: one thread issues TMA copies of the item's Q (two 64-row boxes,
//   double-buffered across items) and of 128-key K and V tiles through a ring of kStages stages,
//   with full / empty mbarriers per buffer, so it runs ahead into the next item;
// - warpgroups 0 and 1 each take 64 query rows of the item. Per key tile: S = Q·Kᵀ (four
//   m64n128k16 from shared memory), issued together with P·V of the tile before (P in registers,
//   V read MN-major) and the row sums of that P (against a tile of ones); the softmax of this
//   tile (mask, max, exponentials) runs while P·V is in flight, and O is rescaled after it lands.
//   The tiles form one stream across items: an item's last P·V goes out with the next item's
//   first Q·Kᵀ, and its rows are stored while that item's softmax has begun, so items do not
//   drain the pipeline (0.102 → 0.092 ms at bge-base 128×256). The producer hands each item's
//   description over in shared memory beside its Q. 128-key tiles halve the per-key cost of the
//   max, the shuffles and the O rescale;
// - sequences are packed back to back, so a tile may reach past its sequence into the next one
//   (or into rows past the batch). Scores of such keys are masked; the V rows are zeroed in
//   shared memory before P·V, so no value of another sequence (or NaN in scratch rows) reaches a
//   product, as the cp.async kernels' zero fill guaranteed.
// The semantics (masks, GQA, ragged batches, rounding of P, sums of the rounded P) are those of
// ops/attention_half_cuda.h, held by the same tests.
// Measured on the H200 (GpuHalfAttentionTiming, f16): bge-base 128×256 0.092 ms against 0.116 for
// the first wgmma kernel (cuDNN's takes about 0.084 in PyTorch's forward), XLM-R large 0.115
// against 0.146; bge-base 32×128 0.017–0.019 against 0.018. Before the cross-item stream (below,
// the figures of the first version): 0.104 / 0.129 / 0.0187.
// Nsight Compute (bge-base 128×256): 31.8 M instructions (cuDNN's 30.8 M), but 0.34 issued per
// scheduler cycle with 2.2 warps each (cuDNN about 0.45): 177 k cycles against cuDNN's 137 k.
// Nsight Compute's stalls: fixed-latency dependencies 2.1 and long scoreboard 1.5 of 6.6 cycles
// between issues; tensor pipe 29 % busy, MUFU (XU) 30 %.
// Tried: the two warpgroups taking turns to issue their products (FA3's "ping-pong", named
// barriers): no change (0.104 ms either way); 64-key tiles with two blocks an SM and a producer
// warp (twice the consumer warps, 112 registers): 0.129 against 0.102 ms.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <map>
#include <mutex>

#include "core/error.h"
#include "ops/attention_mask_cuda.cuh"
#include "ops/attention_tile_cuda.cuh"
#include "ops/attention_wgmma_cuda.h"
#include "ops/check_cuda.h"
#include "ops/launch_cuda.cuh"
#include "ops/tensor_map_cuda.h"
#include "ops/wgmma_cuda.cuh"

namespace il::ops {
namespace {

using namespace attn;  // Elem, fast_exp2, kLog2e (ops/attention_tile_cuda.cuh)

constexpr int kD = 64;           // head dim: a row of a head is 128 bytes, one swizzle row
constexpr int kKeys = 128;       // keys per tile
constexpr int kRows = 128;       // query rows per item (64 per consumer warpgroup)
constexpr int kStages = 4;       // K / V tiles in flight
constexpr uint32_t kBox = 64 * 128;              // a 64-row TMA box of one head: 8 KB
constexpr uint32_t kQBytes = 2 * kBox;           // an item's Q
constexpr uint32_t kTileBytes = 2 * kBox;        // a K or a V tile of 128 keys
constexpr int kConsumerThreads = 256, kThreads = kConsumerThreads + 128;
constexpr int kProducerRegisters = 40, kConsumerRegisters = 232;

// Q buffers, K ring, V ring, the ones tile, barriers (q full / empty ×2, kv full / empty ×
// kStages), and the slack that aligns the start to the swizzle's 1024 bytes.
constexpr uint32_t kQOffset = 0, kKOffset = 2 * kQBytes, kVOffset = kKOffset + kStages * kTileBytes;
constexpr uint32_t kOnesOffset = kVOffset + kStages * kTileBytes, kBarrierOffset = kOnesOffset + 1024;
constexpr uint32_t kItemOffset = kBarrierOffset + (4 + 2 * kStages) * 8;  // an Item per Q buffer
constexpr std::size_t kSharedBytes = kItemOffset + 2 * 32 + 1024;
static_assert(kSharedBytes <= 227 * 1024, "more shared memory than an SM offers a block");

struct Params {
  uint16_t* out;
  std::size_t ldo;
  const int32_t* seq_starts;
  int group;         // query heads per kv head
  float scale_log2;  // scale · log2(e) > 0
  bool causal;
  int half_window;  // −1: none
  int heads;
  int row_tiles;  // items per (sequence, head)
  int items;      // num_seqs · heads · row_tiles
};

// An item as the producer works it out from its index and hands it to the consumers, in shared
// memory beside the item's Q (so no consumer waits on a global load of seq_starts).
struct Item {
  int start, len, row0, head, klo, ntiles;
  int valid;  // 0: the row tile starts past its sequence (skipped), or, handed over, "no more items"
};
static_assert(sizeof(Item) <= 32, "an Item slot is 32 bytes");

__device__ __forceinline__ Item item_of(const Params& p, int x) {
  Item it;
  const int tile = x % p.row_tiles;
  it.head = x / p.row_tiles % p.heads;
  const int seq = x / p.row_tiles / p.heads;
  it.start = p.seq_starts[seq];
  it.len = p.seq_starts[seq + 1] - it.start;
  it.row0 = tile * kRows;
  it.valid = it.row0 < it.len;
  it.klo = 0;
  it.ntiles = 0;
  if (it.valid) {
    // Keys any row of the item may see; the key ranges' bounds are non-decreasing in the row.
    int khi, unused;
    key_range(p, it.row0, it.len, it.klo, unused);
    key_range(p, min(it.row0 + kRows, it.len) - 1, it.len, unused, khi);
    it.ntiles = (khi - it.klo + kKeys - 1) / kKeys;
  }
  return it;
}

// Keeps registers an asynchronous wgmma still reads (A fragments) from being reused before the
// wait that follows it.
__device__ __forceinline__ void keep_registers(uint32_t (&a)[8][4]) {
#pragma unroll
  for (int c = 0; c < 8; ++c)
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(a[c][i])::"memory");
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 1)
    attention_tma_kernel(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,
                         const __grid_constant__ CUtensorMap map_v, Params p) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char shared_raw[];
  const uint32_t base = (sm90::smem_addr(shared_raw) + 1023u) & ~1023u;
  const uint32_t q_s = base + kQOffset, k_s = base + kKOffset, v_s = base + kVOffset, ones_s = base + kOnesOffset;
  const uint32_t q_full = base + kBarrierOffset, q_empty = q_full + 16, kv_full = q_empty + 16,
                 kv_empty = kv_full + 8 * kStages;
  Item* const items = reinterpret_cast<Item*>(shared_raw + (base + kItemOffset - sm90::smem_addr(shared_raw)));
  const int tid = static_cast<int>(threadIdx.x);
  const int x0 = static_cast<int>(blockIdx.x), dx = static_cast<int>(gridDim.x);

  if (tid == 0) {
    for (int b = 0; b < 2; ++b) {
      sm90::barrier_init(q_full + 8 * b, 1);
      sm90::barrier_init(q_empty + 8 * b, 8);  // one arrival per consumer warp
    }
    for (int s = 0; s < kStages; ++s) {
      sm90::barrier_init(kv_full + 8 * s, 1);
      sm90::barrier_init(kv_empty + 8 * s, 8);
    }
    sm90::barrier_init_fence();
  }
  __syncthreads();
  pdl::wait_for_predecessor();  // q, k and v are the previous kernel's output

  if (tid >= kConsumerThreads) {
    // The producer (one lane): for each item, its description and its Q into buffer j % 2,
    // then its key tiles into the ring; tile g (counted across items) goes to stage g % kStages
    // once the consumers have released the tile that used it before. Past the last item, a
    // description with valid = 0 tells the consumers to stop.
    sm90::registers_decrease<kProducerRegisters>();
    if (tid != kConsumerThreads) return;
    int j = 0, g = 0;
    for (int x = x0; x < p.items; x += dx) {
      const Item it = item_of(p, x);
      if (!it.valid) continue;
      const int qb = j & 1;
      if (j >= 2) sm90::barrier_wait(q_empty + 8 * qb, ((j >> 1) - 1) & 1);
      items[qb] = it;  // published by the arrival below (release), read after the wait (acquire)
      sm90::barrier_arrive_expect_bytes(q_full + 8 * qb, kQBytes);
      const uint32_t q_dst = q_s + qb * kQBytes;
      sm90::tma_load_2d(q_dst, &map_q, it.head * kD, it.start + it.row0, q_full + 8 * qb);
      sm90::tma_load_2d(q_dst + kBox, &map_q, it.head * kD, it.start + it.row0 + 64, q_full + 8 * qb);
      const int kv_col = it.head / p.group * kD;
      for (int t = 0; t < it.ntiles; ++t, ++g) {
        const int s = g % kStages;
        if (g >= kStages) sm90::barrier_wait(kv_empty + 8 * s, (g / kStages - 1) & 1);
        sm90::barrier_arrive_expect_bytes(kv_full + 8 * s, 2 * kTileBytes);
        const int key_row = it.start + it.klo + t * kKeys;
        const uint32_t k_dst = k_s + s * kTileBytes, v_dst = v_s + s * kTileBytes;
        sm90::tma_load_2d(k_dst, &map_k, kv_col, key_row, kv_full + 8 * s);
        sm90::tma_load_2d(k_dst + kBox, &map_k, kv_col, key_row + 64, kv_full + 8 * s);
        sm90::tma_load_2d(v_dst, &map_v, kv_col, key_row, kv_full + 8 * s);
        sm90::tma_load_2d(v_dst + kBox, &map_v, kv_col, key_row + 64, kv_full + 8 * s);
      }
      ++j;
    }
    const int qb = j & 1;
    if (j >= 2) sm90::barrier_wait(q_empty + 8 * qb, ((j >> 1) - 1) & 1);
    items[qb].valid = 0;
    sm90::barrier_arrive(q_full + 8 * qb);
    return;
  }

  sm90::registers_increase<kConsumerRegisters>();
  const int group = tid / 128, warp = tid % 128 / 32, lane = tid % 32;
  const int g8 = lane >> 2, tig = lane & 3;
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(ones_s + 4 * tid), "r"(Elem<T>::kOnePair) : "memory");
  sm90::fence_shared_for_tma();
  sm90::named_barrier(1, kConsumerThreads);

  const uint64_t k_desc = sm90::kmajor_sw128_desc(k_s), v_desc = sm90::mnmajor_sw128_desc(v_s);
  const uint64_t ones_desc = sm90::kmajor_sw128_desc(ones_s);
  float o[32], l[4], m[2], s[64];
  uint32_t pf[8][4];
#pragma unroll
  for (int cc = 0; cc < 8; ++cc)
#pragma unroll
    for (int r = 0; r < 4; ++r) pf[cc][r] = 0u;

  const auto issue_scores = [&](uint64_t q_desc, int stage) {
    const uint64_t kb = k_desc + stage * (kTileBytes >> 4);
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk)  // 16 columns of d: 32 bytes along the rows
      sm90::wgmma_ss_m64n128k16(s, q_desc + kk * 2, kb + kk * 2, kk > 0 ? 1u : 0u, T{});
  };
  const auto issue_values = [&](int stage) {
    const uint64_t vb = v_desc + stage * (kTileBytes >> 4);
#pragma unroll
    for (int c = 0; c < kKeys / 16; ++c) {  // 16 keys: 16 rows of 128 bytes
      sm90::wgmma_rs_m64n8k16(l, pf[c], ones_desc, T{});
      sm90::wgmma_rs_m64n64k16_tb(o, pf[c], vb + c * 128, T{});
    }
  };
  const auto release = [&](uint32_t bar) {
    if (lane == 0) sm90::barrier_arrive(bar);
  };
  const auto wait_values = [&] {
    sm90::wgmma_wait<0>();
    keep_registers(pf);
    sm90::fence_registers(o);
    sm90::fence_registers(l);
  };
  // The finished item's rows: O / the sums, rounded, to its rows of out.
  struct Done {
    int start, len, head, wr0;
  };
  const auto store = [&](const Done& d) {
    const int i = d.wr0 + 16 * warp + g8;  // this thread's first row
    if (i < d.len)
      store_rows<T>(o, l, p.out + static_cast<std::size_t>(d.start + i) * p.ldo + static_cast<std::size_t>(d.head) * kD,
                    p.ldo, d.len - i, tig);
  };

  // One stream of key tiles across items: each step issues Q·Kᵀ of its tile together with P·V
  // of the step before, whichever item that belonged to, so an item's last P·V and its store
  // overlap the next item's first scores. The very first P·V multiplies a zero P (by a V tile
  // already in shared memory): it adds nothing, and O is reset before the first item's values.
  int g = 0, prev_stage = 0;
  bool have_prev = false;  // an item whose last P·V is the one in flight
  Done prev{0, 0, 0, 0};
  for (int j = 0;; ++j) {
    const int qb = j & 1;
    sm90::barrier_wait(q_full + 8 * qb, (j >> 1) & 1);
    const Item it = items[qb];
    if (!it.valid) break;
    const int len = it.len;
    // This warpgroup's rows (a warpgroup past the sequence still waits and releases).
    const int wr0 = it.row0 + 64 * group;
    const RowKeys keys = row_keys(p, wr0, len, warp, g8);
    const uint64_t q_desc = sm90::kmajor_sw128_desc(q_s + qb * kQBytes + group * kBox);
    m[0] = m[1] = -INFINITY;

    // Masks S of tile t, updates the running max and leaves exp2(S·scale − max) in s; returns
    // the factors O and the sums must be rescaled by (applied once P·V of the tile before is in).
    const auto probabilities = [&](int t, float (&c)[2]) {
      const int kt = it.klo + t * kKeys;
      // s[4j + 2h + e]: row h (g8 or g8 + 8), key kt + 8j + 2 tig + e.
      if (!keys.covers(kt, kKeys)) mask_scores<16>(s, kt, tig, keys);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float r = row_max<16>(s, h);
        const float mn = fmaxf(m[h], r * p.scale_log2);
        const float ref = mn == -INFINITY ? 0.0f : mn;  // no admissible key yet: exp2(−inf − 0) = 0, not NaN
        c[h] = fast_exp2(m[h] - ref);
        m[h] = mn;
#pragma unroll
        for (int jj = 0; jj < 16; ++jj) {
          s[4 * jj + 2 * h] = fast_exp2(fmaf(s[4 * jj + 2 * h], p.scale_log2, -ref));
          s[4 * jj + 2 * h + 1] = fast_exp2(fmaf(s[4 * jj + 2 * h + 1], p.scale_log2, -ref));
        }
      }
    };
    // Zeroes the V rows of the tile at `stage` that lie past the sequence (keys from `from` on);
    // warpgroup 0 writes, both wait at the named barrier before any P·V may read the tile.
    const auto zero_tail = [&](int stage, int from) {
      if (group == 0) {
        const uint32_t v_tile = v_s + stage * kTileBytes;
        for (int i = tid; i < (kKeys - from) * 8; i += 128)
          asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(v_tile + (from + i / 8) * 128 + (i % 8) * 16),
                       "r"(0u)
                       : "memory");
        sm90::fence_shared_for_tma();
      }
      sm90::named_barrier(2, kConsumerThreads);
    };

    for (int t = 0; t < it.ntiles; ++t, ++g) {
      const int stage = g % kStages;
      sm90::barrier_wait(kv_full + 8 * stage, (g / kStages) & 1);
      const int kt = it.klo + t * kKeys;
      if (kt + kKeys > len) zero_tail(stage, len - kt);  // item-uniform: only the last tile
      // Issued whether or not the tile is visible to this warpgroup (a wgmma under a branch is
      // serialised by the compiler); an invisible tile's P is zero, so its P·V adds nothing.
      sm90::wgmma_fence();
      issue_scores(q_desc, stage);
      sm90::wgmma_commit();
      issue_values(g > 0 ? prev_stage : stage);  // the first: a zero P against this tile's V
      sm90::wgmma_commit();
      sm90::wgmma_wait<1>();  // the scores are in; P·V of the tile before may still run
      sm90::fence_registers(s);
      if (t == it.ntiles - 1) release(q_empty + 8 * qb);
      const bool vis = keys.sees(kt, kKeys);  // warpgroup-uniform
      float c[2] = {1.0f, 1.0f};
      if (vis) probabilities(t, c);
      wait_values();
      if (g > 0) release(kv_empty + 8 * prev_stage);
      if (t == 0) {
        // The previous item (if any) is complete: store it, then start this one from zero.
        if (have_prev) store(prev);
#pragma unroll
        for (int i = 0; i < 32; ++i) o[i] = 0.0f;
#pragma unroll
        for (int i = 0; i < 4; ++i) l[i] = 0.0f;
      } else if (vis) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          l[2 * h] *= c[h];
          l[2 * h + 1] *= c[h];
#pragma unroll
          for (int jj = 0; jj < 8; ++jj) {
            o[4 * jj + 2 * h] *= c[h];
            o[4 * jj + 2 * h + 1] *= c[h];
          }
        }
      }
      // P's A fragment of key chunk cc (keys 16cc … 16cc + 15): registers (row g8, keys 2 tig),
      // (row g8 + 8, same), (row g8, keys 8 + 2 tig), (row g8 + 8, same) = s chunks 2cc, 2cc + 1.
#pragma unroll
      for (int cc = 0; cc < 8; ++cc)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int e0 = 8 * cc + 4 * (r >> 1) + 2 * (r & 1);
          pf[cc][r] = vis ? Elem<T>::pack(s[e0], s[e0 + 1]) : 0u;
        }
      prev_stage = stage;
    }
    prev = Done{it.start, len, it.head, wr0};
    have_prev = true;
  }
  // The last item's last P·V (without items, a zero P against whatever stage 0 holds: adds to
  // nothing that is stored).
  sm90::wgmma_fence();
  issue_values(prev_stage);
  sm90::wgmma_commit();
  wait_values();
  if (have_prev) {
    release(kv_empty + 8 * prev_stage);
    store(prev);
  }
#else
  (void)map_q, (void)map_k, (void)map_v, (void)p;
  __trap();  // never launched: attention_tma_applies requires a compute capability 9.0 device
#endif
}

int sm_count() {
  int device = 0;
  IL_CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex mutex;
  static std::map<int, int> per_device;
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto found = per_device.find(device); found != per_device.end()) return found->second;
  int count = 0;
  IL_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  per_device.emplace(device, count);
  return count;
}

template <typename T>
void launch(const HalfAttentionArgs& a, Params p, std::size_t max_seq_len, cudaStream_t stream) {
  static std::once_flag once;
  std::call_once(once, [] {
    IL_CUDA_CHECK(cudaFuncSetAttribute(attention_tma_kernel<T>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSharedBytes)));
  });
  const bool bf16 = a.type == HalfType::kBF16;
  const CUtensorMap map_q = tensor_map_2d(a.q, a.rows, a.heads * kD, a.ldq, 64, kD, bf16, "attention (tma)");
  const CUtensorMap map_k = tensor_map_2d(a.k, a.rows, a.kv_heads * kD, a.ldk, 64, kD, bf16, "attention (tma)");
  const CUtensorMap map_v = tensor_map_2d(a.v, a.rows, a.kv_heads * kD, a.ldv, 64, kD, bf16, "attention (tma)");
  const std::size_t row_tiles = (max_seq_len + kRows - 1) / kRows;
  const std::size_t items = a.num_seqs * a.heads * row_tiles;
  check(items < (std::size_t{1} << 31), "attention (tma): batch too large for one launch");
  p.row_tiles = static_cast<int>(row_tiles);
  p.items = static_cast<int>(items);
  const auto blocks = std::min<std::size_t>(items, static_cast<std::size_t>(sm_count()));
  pdl::launch(attention_tma_kernel<T>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), kSharedBytes, stream,
              map_q, map_k, map_v, p);
}

}  // namespace

bool attention_tma_applies(const HalfAttentionArgs& a) {
  // TMA reads whole 64-row boxes: it needs to know how many rows the buffers hold.
  if (a.rows == 0 || a.rows >= (std::size_t{1} << 31)) return false;
  return attention_wgmma_applies(a) && tensor_maps_available();
}

void attention_tma_cuda(const HalfAttentionArgs& a, std::size_t max_seq_len, cudaStream_t stream) {
  check(a.q && a.k && a.v && a.out && a.seq_starts, "attention (tma): null operand");
  check(attention_tma_applies(a), "attention (tma): head_dim ", a.head_dim, ", rows ", a.rows,
        ", layout or device it does not handle (it needs head_dim 64, the buffers' row count, 16-byte aligned "
        "rows, sm_90)");
  check(a.ldq >= a.heads * a.head_dim && a.ldo >= a.heads * a.head_dim && a.ldk >= a.kv_heads * a.head_dim &&
            a.ldv >= a.kv_heads * a.head_dim,
        "attention (tma): row stride smaller than heads × head_dim");
  if (a.num_seqs == 0 || max_seq_len == 0) return;
  const int half_window = a.window == 0 || a.window / 2 >= max_seq_len ? -1 : static_cast<int>(a.window / 2);
  const Params p{static_cast<uint16_t*>(a.out),
                 a.ldo,
                 a.seq_starts,
                 static_cast<int>(a.heads / a.kv_heads),
                 a.scale * kLog2e,
                 a.mask == MaskMode::kCausal,
                 half_window,
                 static_cast<int>(a.heads),
                 0,
                 0};  // row_tiles, items: set by the launch
  if (a.type == HalfType::kF16) return launch<__half>(a, p, max_seq_len, stream);
  launch<__nv_bfloat16>(a, p, max_seq_len, stream);
}

}  // namespace il::ops
