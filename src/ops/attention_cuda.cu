// Ragged flash-style attention; q, k, v and out in f32, f16 or bf16, staged in shared memory and
// computed in f32 (the f16 / bf16 fallback of the tensor-core kernel). A block owns (sequence,
// 32 query rows, head); its four warps own eight query rows each. Keys stream through shared
// memory 32 at a time (one key per lane for q·k, then one output dimension per lane for p·v),
// with the running max and sum of the online softmax per row in registers: memory is O(tile),
// never O(n²), whatever the length.
// Masks follow ops/attention.h exactly: row i of a sequence of length n sees keys
// [lo_i, hi_i) with hi_i = i + 1 when causal (else n), and with a window w additionally
// |i − j| ≤ w / 2.
#include <cmath>

#include "ops/attention_mask_cuda.cuh"
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/ops_cuda.h"
#include "ops/reduce_cuda.cuh"

namespace il::ops {
namespace {

constexpr int kWarps = 4;
constexpr int kRowsPerWarp = 8;
constexpr int kBlockRows = kWarps * kRowsPerWarp;
constexpr int kKeyTile = 32;  // one key per lane

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
  float scale;
  bool causal;
  int half_window;  // −1: no window
};

// Shared memory: K and V tiles padded to D + 4 floats per key (16-byte rows for float4 reads;
// lane j's row starts 4 banks after lane j − 1's, so a quarter warp's float4 reads hit distinct
// banks), the block's scaled queries, and per warp the probabilities of one tile [key][row].
template <int D>
__host__ __device__ constexpr int key_stride() {
  return D + 4;
}
template <int D>
constexpr std::size_t shared_bytes() {
  return (2 * kKeyTile * key_stride<D>() + kBlockRows * D + kWarps * kKeyTile * kRowsPerWarp) * sizeof(float);
}

template <int D, typename T>
__global__ void __launch_bounds__(kWarps * 32) attention_kernel(AttnParams<T> p) {
  static_assert(kRowsPerWarp == 8 && D % 32 == 0, "the P·V loop reads 8 probabilities as two float4");
  constexpr int kStride = key_stride<D>();
  constexpr int kPerLane = D / 32;  // output dimensions per lane
  extern __shared__ float4 smem4[];  // float4: 16-byte aligned for the vector reads
  float* ks = reinterpret_cast<float*>(smem4);
  float* vs = ks + kKeyTile * kStride;
  float* qs = vs + kKeyTile * kStride;
  float* ps = qs + kBlockRows * D;

  const int seq = static_cast<int>(blockIdx.x);
  const int head = static_cast<int>(blockIdx.z);
  const int start = p.seq_starts[seq];
  const int len = p.seq_starts[seq + 1] - start;
  const int row0 = static_cast<int>(blockIdx.y) * kBlockRows;
  if (row0 >= len) return;  // block-uniform: the grid covers the longest sequence
  const int hd = p.head_dim;
  const int kvh = head / p.group;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;

  for (int idx = threadIdx.x; idx < kBlockRows * D; idx += blockDim.x) {
    const int r = idx / D, d = idx % D;
    float val = 0.0f;
    if (row0 + r < len && d < hd)
      val = elem::load(p.q + static_cast<std::size_t>(start + row0 + r) * p.ldq + static_cast<std::size_t>(head) * hd + d) *
            p.scale;
    qs[idx] = val;
  }

  // Keys any row of the block may see.
  const int last = min(row0 + kBlockRows, len) - 1;
  int klo, khi, unused_lo, unused_hi;
  key_range(p, row0, len, klo, unused_hi);
  key_range(p, last, len, unused_lo, khi);

  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kPerLane];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int c = 0; c < kPerLane; ++c) acc[r][c] = 0.0f;
  }

  const T* kbase = p.k + static_cast<std::size_t>(kvh) * hd;
  const T* vbase = p.v + static_cast<std::size_t>(kvh) * hd;
  for (int kt = klo; kt < khi; kt += kKeyTile) {
    __syncthreads();  // the previous tile is consumed (and the queries are staged)
    for (int idx = threadIdx.x; idx < kKeyTile * D; idx += blockDim.x) {
      const int j = idx / D, d = idx % D;
      const int key = kt + j;
      float kv = 0.0f, vv = 0.0f;
      if (key < khi && d < hd) {
        kv = elem::load(kbase + static_cast<std::size_t>(start + key) * p.ldk + d);
        vv = elem::load(vbase + static_cast<std::size_t>(start + key) * p.ldv + d);
      }
      ks[j * kStride + d] = kv;
      vs[j * kStride + d] = vv;
    }
    __syncthreads();

    // Scores of the warp's 8 rows against the tile's 32 keys (lane = key): each K value read
    // from shared memory feeds 8 FMAs, queries are broadcast, both as float4. The sum runs
    // over d in order, as a single-row dot product would.
    const int key = kt + lane;
    float s[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) s[r] = 0.0f;
    const float4* k4 = reinterpret_cast<const float4*>(ks + lane * kStride);
    const float4* q4 = reinterpret_cast<const float4*>(qs + warp * kRowsPerWarp * D);
#pragma unroll 4
    for (int d4 = 0; d4 < D / 4; ++d4) {
      const float4 kv = k4[d4];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float4 qv = q4[r * (D / 4) + d4];
        s[r] = fmaf(qv.x, kv.x, s[r]);
        s[r] = fmaf(qv.y, kv.y, s[r]);
        s[r] = fmaf(qv.z, kv.z, s[r]);
        s[r] = fmaf(qv.w, kv.w, s[r]);
      }
    }
    float* pw = ps + warp * kKeyTile * kRowsPerWarp;  // this warp's probabilities, [key][row]
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int i = row0 + warp * kRowsPerWarp + r;  // sequence-local query row
      int lo, hi;
      key_range(p, i, len, lo, hi);
      // Warp-uniform: rows past the sequence and tiles with no key this row may see add
      // nothing (probability 0), so the running max below is always finite.
      float prob = 0.0f;
      if (i < len && kt < hi && kt + kKeyTile > lo) {
        const bool seen = key >= lo && key < hi;
        const float sc = seen ? s[r] : -INFINITY;
        const float m_new = fmaxf(m[r], cuda_reduce::warp_max(sc));
        const float corr = expf(m[r] - m_new);  // 0 on the row's first tile (m = −inf)
        prob = seen ? expf(sc - m_new) : 0.0f;
        l[r] = l[r] * corr + cuda_reduce::warp_sum(prob);
        m[r] = m_new;
#pragma unroll
        for (int c = 0; c < kPerLane; ++c) acc[r][c] *= corr;
      }
      pw[lane * kRowsPerWarp + r] = prob;
    }
    __syncwarp();
    // P·V: per key, its 8 probabilities (two broadcast float4) times the lane's V columns.
    for (int j = 0; j < kKeyTile; ++j) {
      const float4 p0 = reinterpret_cast<const float4*>(pw + j * kRowsPerWarp)[0];
      const float4 p1 = reinterpret_cast<const float4*>(pw + j * kRowsPerWarp)[1];
      const float pr[kRowsPerWarp] = {p0.x, p0.y, p0.z, p0.w, p1.x, p1.y, p1.z, p1.w};
      const float* vrow = vs + j * kStride + lane;
#pragma unroll
      for (int c = 0; c < kPerLane; ++c) {
        const float vv = vrow[32 * c];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) acc[r][c] = fmaf(pr[r], vv, acc[r][c]);
      }
    }
    __syncwarp();  // the probabilities are rewritten by the next tile
  }

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int i = row0 + warp * kRowsPerWarp + r;
    if (i >= len) continue;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;  // no admissible key: zeros, as the CPU op
    T* out = p.out + static_cast<std::size_t>(start + i) * p.ldo + static_cast<std::size_t>(head) * hd;
#pragma unroll
    for (int c = 0; c < kPerLane; ++c) {
      const int d = lane + 32 * c;
      if (d < hd) elem::store(out + d, acc[r][c] * inv);
    }
  }
}

template <int D, typename T>
void launch(const AttnParams<T>& p, std::size_t num_seqs, std::size_t max_len, std::size_t heads,
            cudaStream_t stream) {
  constexpr std::size_t kBytes = shared_bytes<D>();
  // Above 48 KiB a kernel must opt in; the attribute is per function and cheap to set again.
  IL_CUDA_CHECK(cudaFuncSetAttribute(attention_kernel<D, T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(kBytes)));
  const dim3 grid(static_cast<unsigned>(num_seqs),
                  static_cast<unsigned>((max_len + kBlockRows - 1) / kBlockRows),
                  static_cast<unsigned>(heads));
  attention_kernel<D, T><<<grid, kWarps * 32, kBytes, stream>>>(p);
  IL_CUDA_CHECK_LAUNCH();
}

}  // namespace

void attention_cuda(const AttentionArgs& a, std::size_t max_seq_len, cudaStream_t stream, DType type) {
  // check_attention reads seq_starts, which live on the device here: the shape checks only.
  check(a.q && a.k && a.v && a.out && a.seq_starts, "attention: null operand");
  check(a.heads > 0 && a.kv_heads > 0 && a.heads % a.kv_heads == 0,
        "attention: heads (", a.heads, ") must be a multiple of kv_heads (", a.kv_heads, ")");
  check(a.head_dim > 0 && a.head_dim <= kAttentionMaxHeadDim, "attention: head_dim ", a.head_dim,
        " outside 1..", kAttentionMaxHeadDim, " (CUDA)");
  check(a.ldq >= a.heads * a.head_dim && a.ldo >= a.heads * a.head_dim &&
            a.ldk >= a.kv_heads * a.head_dim && a.ldv >= a.kv_heads * a.head_dim,
        "attention: row stride smaller than heads × head_dim");
  check(a.heads <= 65535 && a.num_seqs < (1u << 31) && max_seq_len < (1u << 30),
        "attention: batch too large for one launch");
  if (a.num_seqs == 0 || max_seq_len == 0) return;
  elem::dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    const AttnParams<T> p{reinterpret_cast<const T*>(a.q), a.ldq, reinterpret_cast<const T*>(a.k), a.ldk,
                          reinterpret_cast<const T*>(a.v), a.ldv, reinterpret_cast<T*>(a.out), a.ldo, a.seq_starts,
                          static_cast<int>(a.heads / a.kv_heads), static_cast<int>(a.head_dim), a.scale,
                          a.mask == MaskMode::kCausal, a.window > 0 ? static_cast<int>(a.window / 2) : -1};
    if (a.head_dim <= 32) return launch<32>(p, a.num_seqs, max_seq_len, a.heads, stream);
    if (a.head_dim <= 64) return launch<64>(p, a.num_seqs, max_seq_len, a.heads, stream);
    if (a.head_dim <= 128) return launch<128>(p, a.num_seqs, max_seq_len, a.heads, stream);
    return launch<256>(p, a.num_seqs, max_seq_len, a.heads, stream);
  });
}

}  // namespace il::ops
