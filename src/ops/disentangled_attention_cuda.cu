// DeBERTa's disentangled attention (ops/disentangled_attention.h) on the GPU, in two forms.
//
// f16 / bf16 with a tables workspace: the tensor-core form (ops/attention_half_cuda.h,
// RelativeScores): two small products fill per-head c2p / p2c tables over the window of columns
// the batch's distances reach, and the mma.sync flash kernel starts each score tile from the
// values it gathers there. The rest of this file is the CUDA-core form (f32, or no workspace):
//
// One block per (sequence, head, kRows query rows); one warp per query row. The block stages a
// tile of 32 keys and values in shared memory (f32); lane j of a warp scores key j of the tile
// (q·k from shared memory). The relative terms, the c2p term q·pos_key[m] and the p2c term
// k·pos_query[m] with m = rel_index[i − j + max_len − 1], are computed per key of the tile by the
// whole warp, the lanes splitting the head's columns so each relative row is read coalesced (the
// tables are f32 in every mode and shared by every block of the head, so they stay in cache),
// and handed to the key's lane. The softmax is online over the
// tiles (running max and sum per row, warp shuffles), the output accumulated in registers, each
// lane owning head_dim / 32 dimensions. q, k, v and out are f32, f16 or bf16: loaded into f32,
// computed in f32, rounded once on the store.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ops/attention_half_cuda.h"
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/launch_cuda.cuh"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

constexpr int kRows = 8;   // query rows (warps) of a block
constexpr int kKeys = 32;  // keys of a tile: one per lane

template <typename T>
struct DisParams {
  const T *q, *k, *v;
  T* out;
  std::size_t ldq, ldk, ldv, ldo;
  const int32_t* seq_starts;
  const float *pos_key, *pos_query, *rel_index;
  int head_dim, width, max_len;
  float scale;
};

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// HD: head_dim rounded up to a multiple of 32 (32, 64 or 128); the padding columns are zeros.
template <typename T, int HD>
__global__ void __launch_bounds__(kRows * 32) disentangled_kernel(DisParams<T> p) {
  pdl::wait_for_predecessor();
  constexpr int kPerLane = HD / 32;
  __shared__ float ks[kKeys][HD + 1];  // +1: lanes reading one column of different rows hit distinct banks
  __shared__ float vs[kKeys][HD];
  __shared__ float qs[kRows][HD];
  const int s = static_cast<int>(blockIdx.x), h = static_cast<int>(blockIdx.y);
  const int start = p.seq_starts[s];
  const int len = p.seq_starts[s + 1] - start;
  const int row0 = static_cast<int>(blockIdx.z) * kRows;
  if (row0 >= len) return;  // the whole block: no barrier is skipped by some threads only
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int i = row0 + warp;
  const bool active = i < len;
  const int hd = p.head_dim, col = h * hd;
  for (int d = lane; d < HD; d += 32)
    qs[warp][d] = active && d < hd ? elem::load(p.q + static_cast<std::size_t>(start + i) * p.ldq + col + d) : 0.0f;

  float acc[kPerLane];
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) acc[e] = 0.0f;
  float mx = -INFINITY, sum = 0.0f;
  for (int j0 = 0; j0 < len; j0 += kKeys) {
    __syncthreads();  // the previous tile is consumed (and qs written, the first time)
    for (int e = static_cast<int>(threadIdx.x); e < kKeys * HD; e += kRows * 32) {
      const int r = e / HD, d = e % HD, j = j0 + r;
      const bool ok = j < len && d < hd;
      const std::size_t row = static_cast<std::size_t>(start + (ok ? j : 0));
      ks[r][d] = ok ? elem::load(p.k + row * p.ldk + col + d) : 0.0f;
      vs[r][d] = ok ? elem::load(p.v + row * p.ldv + col + d) : 0.0f;
    }
    __syncthreads();
    if (!active) continue;
    // The relative terms of the tile's keys: for key t of the tile, q_i·pos_key[m] + k_t·pos_query[m]
    // with the lanes splitting the head's columns (coalesced reads of the two table rows, k_t from
    // shared memory) and one warp sum; lane t keeps key t's value.
    float bias = 0.0f;
    if (p.pos_key != nullptr || p.pos_query != nullptr) {
      const int tile_keys = min(kKeys, len - j0);
      for (int t = 0; t < tile_keys; ++t) {
        // Distances of one sequence stay inside the table (the host limits sequences to
        // max_len); the clamp only keeps a bad batch from reading outside it.
        const int di = min(max(i - (j0 + t) + p.max_len - 1, 0), 2 * p.max_len - 2);
        const std::size_t row = static_cast<std::size_t>(p.rel_index[di]) * p.width + col;
        float part = 0.0f;
#pragma unroll
        for (int e = 0; e < kPerLane; ++e) {
          const int d = lane + 32 * e;
          if (d < hd) {
            if (p.pos_key != nullptr) part = fmaf(qs[warp][d], __ldg(p.pos_key + row + d), part);
            if (p.pos_query != nullptr) part = fmaf(ks[t][d], __ldg(p.pos_query + row + d), part);
          }
        }
        part = warp_sum(part);
        if (lane == t) bias = part;
      }
    }
    const int j = j0 + lane;
    float sc = -INFINITY;
    if (j < len) {
      float qk = 0.0f;
      for (int d = 0; d < hd; ++d) qk = fmaf(qs[warp][d], ks[lane][d], qk);
      sc = (qk + bias) * p.scale;
    }
    const float new_max = fmaxf(mx, warp_max(sc));  // finite: key j0 + 0 < len always scores
    const float pj = j < len ? expf(sc - new_max) : 0.0f;
    const float corr = mx == -INFINITY ? 0.0f : expf(mx - new_max);
    sum = sum * corr + warp_sum(pj);
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) acc[e] *= corr;
    for (int r = 0; r < kKeys; ++r) {
      const float pr = __shfl_sync(0xffffffffu, pj, r);
#pragma unroll
      for (int e = 0; e < kPerLane; ++e) acc[e] = fmaf(pr, vs[r][lane + 32 * e], acc[e]);
    }
    mx = new_max;
  }
  if (!active) return;
  const float inv = 1.0f / sum;
  T* o = p.out + static_cast<std::size_t>(start + i) * p.ldo + col;
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) {
    const int d = lane + 32 * e;
    if (d < hd) elem::store(o + d, acc[e] * inv);
  }
}

template <typename T, int HD>
void launch(const DisentangledAttentionArgs& a, std::size_t max_seq_len, cudaStream_t stream) {
  DisParams<T> p{};
  p.q = static_cast<const T*>(a.q.data);
  p.k = static_cast<const T*>(a.k.data);
  p.v = static_cast<const T*>(a.v.data);
  p.out = static_cast<T*>(a.out.data);
  p.ldq = a.q.ld;
  p.ldk = a.k.ld;
  p.ldv = a.v.ld;
  p.ldo = a.out.ld;
  p.seq_starts = a.seq_starts;
  p.pos_key = a.pos_key;
  p.pos_query = a.pos_query;
  p.rel_index = a.rel_index;
  p.head_dim = static_cast<int>(a.head_dim);
  p.width = static_cast<int>(a.heads * a.head_dim);
  p.max_len = static_cast<int>(a.max_len);
  p.scale = a.scale;
  const dim3 grid(static_cast<unsigned>(a.num_seqs), static_cast<unsigned>(a.heads),
                  static_cast<unsigned>((max_seq_len + kRows - 1) / kRows));
  pdl::launch(disentangled_kernel<T, HD>, grid, dim3(kRows * 32), 0, stream, p);
}

// The f32 form's tables: block (64 token rows, 64 window columns, head · terms + term), 256
// threads as 16 × 16, each a 4 × 4 output tile; the head's slices of x (q or k) and of the
// relative table stream through shared memory 32 dimensions at a time, transposed ([d][row]),
// so a thread's step reads two float4 for sixteen FMAs. Plain f32 FMAs in order of d, as the
// parity class wants (no TF32).
constexpr int kTableTile = 64, kTableDepth = 32, kTableThreads = 256;

struct TablesF32 {
  const float* x[2];  // per term: q or k, head 0
  std::size_t ldx[2];
  const float* pos[2];  // per term: pos_key or pos_query, row m_lo, head 0
  std::size_t ld_pos;
  float* out[2];
  std::size_t head_stride;
  int pitch, m_count, head_dim, heads;
  const int32_t* seq_starts;
  int num_seqs;
};

__global__ void __launch_bounds__(kTableThreads) relative_tables_f32_kernel(TablesF32 p) {
  pdl::wait_for_predecessor();
  __shared__ __align__(16) float xs[kTableDepth][kTableTile + 4];
  __shared__ __align__(16) float ps[kTableDepth][kTableTile + 4];
  const int rows = p.seq_starts[p.num_seqs];
  const int r0 = static_cast<int>(blockIdx.x) * kTableTile, c0 = static_cast<int>(blockIdx.y) * kTableTile;
  if (r0 >= rows) return;  // block-uniform
  const int head = static_cast<int>(blockIdx.z) % p.heads;
  const bool second = static_cast<int>(blockIdx.z) >= p.heads;
  const int hd = p.head_dim;
  const std::size_t ldx = second ? p.ldx[1] : p.ldx[0];
  const float* x = (second ? p.x[1] : p.x[0]) + static_cast<std::size_t>(head) * hd;
  const float* pos = (second ? p.pos[1] : p.pos[0]) + static_cast<std::size_t>(head) * hd;
  const int tid = static_cast<int>(threadIdx.x), tx = tid % 16, ty = tid / 16;
  float acc[4][4] = {};
  for (int d0 = 0; d0 < hd; d0 += kTableDepth) {
    __syncthreads();  // the previous chunk is consumed
    for (int idx = tid; idx < kTableTile * kTableDepth; idx += kTableThreads) {
      const int r = idx / kTableDepth, d = idx % kTableDepth;  // a warp reads one row's 32 dims
      const bool d_ok = d0 + d < hd;
      xs[d][r] = d_ok && r0 + r < rows ? x[static_cast<std::size_t>(r0 + r) * ldx + d0 + d] : 0.0f;
      ps[d][r] = d_ok && c0 + r < p.m_count ? pos[static_cast<std::size_t>(c0 + r) * p.ld_pos + d0 + d] : 0.0f;
    }
    __syncthreads();
#pragma unroll 8
    for (int d = 0; d < kTableDepth; ++d) {
      const float4 a = *reinterpret_cast<const float4*>(&xs[d][ty * 4]);
      const float4 b = *reinterpret_cast<const float4*>(&ps[d][tx * 4]);
      const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
  }
  float* out = (second ? p.out[1] : p.out[0]) + static_cast<std::size_t>(head) * p.head_stride;
  const int col = c0 + tx * 4;  // pitch is a multiple of 8: a float4 is wholly in or out
  if (col >= p.pitch) return;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = r0 + ty * 4 + i;
    if (r < rows)
      *reinterpret_cast<float4*>(out + static_cast<std::size_t>(r) * p.pitch + col) =
          make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
  }
}

bool aligned16(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; }

// The f32 form for the heads of `a` (one pass; the caller splits the heads by the workspace).
void relative_f32_pass(const DisentangledAttentionArgs& a, std::size_t h0, std::size_t heads, RelWindow w,
                       std::size_t pitch, std::size_t max_seq_len, cudaStream_t stream) {
  const int terms = (a.pos_key != nullptr) + (a.pos_query != nullptr);
  const std::size_t head_stride = a.table_rows * pitch, shift = h0 * a.head_dim;
  float* c2p = a.tables;
  float* p2c = a.pos_key != nullptr ? a.tables + heads * head_stride : a.tables;
  const auto col = [&](const void* base) { return static_cast<const float*>(base) + shift; };
  TablesF32 tp{};
  int t = 0;
  const std::size_t off = static_cast<std::size_t>(w.m_lo) * a.heads * a.head_dim + shift;
  if (a.pos_key != nullptr) {
    tp.x[t] = col(a.q.data);
    tp.ldx[t] = a.q.ld;
    tp.pos[t] = a.pos_key + off;
    tp.out[t++] = c2p;
  }
  if (a.pos_query != nullptr) {
    tp.x[t] = col(a.k.data);
    tp.ldx[t] = a.k.ld;
    tp.pos[t] = a.pos_query + off;
    tp.out[t++] = p2c;
  }
  tp.ld_pos = a.heads * a.head_dim;
  tp.head_stride = head_stride;
  tp.pitch = static_cast<int>(pitch);
  tp.m_count = w.count;
  tp.head_dim = static_cast<int>(a.head_dim);
  tp.heads = static_cast<int>(heads);
  tp.seq_starts = a.seq_starts;
  tp.num_seqs = static_cast<int>(a.num_seqs);
  const dim3 grid(static_cast<unsigned>((a.table_rows + kTableTile - 1) / kTableTile),
                  static_cast<unsigned>((w.count + kTableTile - 1) / kTableTile),
                  static_cast<unsigned>(heads * static_cast<std::size_t>(terms)));
  pdl::launch(relative_tables_f32_kernel, grid, dim3(kTableThreads), 0, stream, tp);

  AttentionCudaArgs f;
  f.q = col(a.q.data);
  f.ldq = a.q.ld;
  f.k = col(a.k.data);
  f.ldk = a.k.ld;
  f.v = col(a.v.data);
  f.ldv = a.v.ld;
  f.out = static_cast<float*>(a.out.data) + shift;
  f.ldo = a.out.ld;
  f.seq_starts = a.seq_starts;
  f.num_seqs = a.num_seqs;
  f.heads = f.kv_heads = heads;
  f.head_dim = a.head_dim;
  f.scale = a.scale;
  f.type = DType::kF32;
  f.max_seq_len = max_seq_len;
  RelativeBiasF32 r;
  r.c2p = a.pos_key != nullptr ? c2p : nullptr;
  r.p2c = a.pos_query != nullptr ? p2c : nullptr;
  r.head_stride = head_stride;
  r.pitch = static_cast<int>(pitch);
  r.rel_index = a.rel_index;
  r.max_len = static_cast<int>(a.max_len);
  r.m_lo = w.m_lo;
  r.m_count = w.count;
  attention_relative_f32_cuda(f, r, stream);
}

// The f32 form where it applies: the workspace holds one head's tables at least, the table
// offsets fit in int, the output is a 16-byte-aligned f32 view.
bool relative_f32(const DisentangledAttentionArgs& a, std::size_t max_seq_len, cudaStream_t stream) {
  const int terms = (a.pos_key != nullptr) + (a.pos_query != nullptr);
  if (terms == 0 || a.table_rows == 0 || !aligned16(a.tables) || a.q.dtype != DType::kF32 ||
      a.k.dtype != DType::kF32 || a.v.dtype != DType::kF32)
    return false;
  const RelWindow w = deberta_rel_window(max_seq_len, a);
  const std::size_t pitch = (static_cast<std::size_t>(w.count) + 7) / 8 * 8;
  const std::size_t per_head = static_cast<std::size_t>(terms) * a.table_rows * pitch;
  if (per_head > a.table_floats || a.table_rows * pitch >= (1u << 31)) return false;
  const std::size_t per_pass = std::min(a.heads, a.table_floats / per_head);
  for (std::size_t h0 = 0; h0 < a.heads; h0 += per_pass)
    relative_f32_pass(a, h0, std::min(per_pass, a.heads - h0), w, pitch, max_seq_len, stream);
  return true;
}

}  // namespace

bool disentangled_attention_cuda_supports(const DisentangledAttentionArgs& a) {
  return a.head_dim >= 1 && a.head_dim <= kDisentangledMaxHeadDim && a.heads * a.head_dim < (1u << 30) &&
         a.max_len < (1u << 30);
}

void disentangled_attention_cuda(const DisentangledAttentionArgs& a, std::size_t max_seq_len, cudaStream_t stream) {
  check_disentangled_attention_shape(a, "disentangled attention (CUDA)");
  check(disentangled_attention_cuda_supports(a), "disentangled attention (CUDA): head_dim ", a.head_dim,
        " outside 1..", kDisentangledMaxHeadDim);
  check(a.num_seqs < (1u << 31) && a.heads < 65536 && (max_seq_len + kRows - 1) / kRows < 65536,
        "disentangled attention (CUDA): grid too large");
  if (a.num_seqs == 0 || max_seq_len == 0) return;
  if (a.tables != nullptr && a.out.dtype == DType::kF32 && relative_f32(a, max_seq_len, stream)) return;
  if (a.tables != nullptr && a.out.dtype != DType::kF32 && (a.pos_key != nullptr || a.pos_query != nullptr)) {
    // The tensor-core form, where its layout conditions hold (any real model's fused QKV does).
    check((a.pos_key == nullptr || a.pos_key_t.data != nullptr) && (a.pos_query == nullptr || a.pos_query_t.data != nullptr),
          "disentangled attention (CUDA): the tensor-core form needs the relative tables in ",
          dtype_name(a.out.dtype));
    check(a.q.dtype == a.out.dtype && a.k.dtype == a.out.dtype && a.v.dtype == a.out.dtype &&
              (a.pos_key == nullptr || a.pos_key_t.dtype == a.out.dtype) &&
              (a.pos_query == nullptr || a.pos_query_t.dtype == a.out.dtype),
          "disentangled attention (CUDA): operands of mixed element types");
    HalfAttentionArgs h;
    h.q = a.q.data;
    h.ldq = a.q.ld;
    h.k = a.k.data;
    h.ldk = a.k.ld;
    h.v = a.v.data;
    h.ldv = a.v.ld;
    h.out = a.out.data;
    h.ldo = a.out.ld;
    h.seq_starts = a.seq_starts;
    h.num_seqs = a.num_seqs;
    h.heads = h.kv_heads = a.heads;
    h.head_dim = a.head_dim;
    h.scale = a.scale;
    h.type = a.out.dtype == DType::kF16 ? HalfType::kF16 : HalfType::kBF16;
    RelativeScores r;
    r.pos_key = a.pos_key != nullptr ? a.pos_key_t.data : nullptr;
    r.pos_query = a.pos_query != nullptr ? a.pos_query_t.data : nullptr;
    r.ld_pos = a.pos_key != nullptr ? a.pos_key_t.ld : a.pos_query_t.ld;
    check(a.pos_key == nullptr || a.pos_query == nullptr || a.pos_key_t.ld == a.pos_query_t.ld,
          "disentangled attention (CUDA): relative tables of different strides");
    r.rel_index = a.rel_index;
    r.max_len = static_cast<int>(a.max_len);
    const RelWindow w = deberta_rel_window(max_seq_len, a);
    r.m_lo = w.m_lo;
    r.m_count = w.count;
    r.tables = a.tables;
    r.table_floats = a.table_floats;
    r.table_rows = a.table_rows;
    if (attention_half_relative_supports(h, r)) return attention_half_relative_cuda(h, r, max_seq_len, stream);
  }
  elem::dispatch(a.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (a.head_dim <= 32) return launch<T, 32>(a, max_seq_len, stream);
    if (a.head_dim <= 64) return launch<T, 64>(a, max_seq_len, stream);
    return launch<T, 128>(a, max_seq_len, stream);
  });
}

}  // namespace il::ops
