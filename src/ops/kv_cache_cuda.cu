// The KV cache ops (ops/kv_cache.h) on the GPU.
//
// kv_write / inject_rows: one block per row, a plain strided copy (rows whose index is negative,
// the padding of a bucketed launch, are skipped).
//
// cached_attention, grouped kernel (the decode path: head_dim a power-of-two multiple of a 16-byte
// vector, up to 32 vectors; at most 8 query heads per KV head; 16-byte aligned K / V rows): one
// block per (token, KV head, split of the entries), four warps, handling every query head of the
// KV group, so each cached K / V row is read from memory once per group rather than once per query
// head. A run of head_dim / kVec lanes holds one entry (one 16-byte vector load per lane for K and
// one for V, two entries in flight per run), the queries of the group sit in registers, a shuffle
// inside the run gives each head's score, and each run keeps its own online softmax (maximum, sum,
// weighted values) per head; the runs are merged by shuffles in the warp and through shared memory
// in the block. Other shapes take the generic kernel: one block per (token, query head, split),
// one entry per warp at a time, one value per lane and step.
//
// Either kernel cuts a token's entries into `splits` runs (flash-decoding): a decode step of one
// sequence would otherwise run only a few blocks, each walking thousands of entries. The split
// count depends only on the launched token count and the shapes (host values fixed in a captured
// graph); each run is at least kMinRun entries long, so a short cache leaves trailing splits empty
// (they report nothing to the merge) instead of cutting it into slivers. With one split a block
// writes the output; with several it writes its (maximum, sum, weighted sum) per head to the
// workspace and a second kernel merges the splits of each (token, head). Arithmetic in f32
// whatever the cache's type. A token whose cache length is 0 (bucket padding) writes zeros.
//
// A sliding window (CachedAttentionArgs::window) narrows a token's entries to
// [window_start, cache length): both kernels and the split runs cover that range alone. Head
// dims past the grouped kernel's (512: Gemma-4's global layers) take the generic kernel at 16
// values a lane.
#include <algorithm>
#include <cmath>

#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/kv_cache.h"
#include "ops/launch_cuda.cuh"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

constexpr int kWarps = 4;
constexpr std::size_t kMaxSplits = 64;
// The shortest run of entries a split takes (16: one pass of the grouped kernel's block over
// bf16 rows of 128 values).
constexpr int kMinRun = 16;
// Blocks that keep an H100 / H200 busy (about four per SM).
constexpr std::size_t kTargetBlocks = 512;

template <typename T>
__global__ void copy_rows_kernel(const T* src, std::size_t lds, T* dst, std::size_t ldd, const int32_t* index,
                                 bool index_is_destination, int cols) {
  pdl::wait_for_predecessor();
  const int r = static_cast<int>(blockIdx.x);
  const int k = index[r];
  if (k < 0) return;
  const T* s = src + static_cast<std::size_t>(index_is_destination ? r : k) * lds;
  T* d = dst + static_cast<std::size_t>(index_is_destination ? k : r) * ldd;
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += static_cast<int>(blockDim.x)) d[c] = s[c];
}

template <typename T>
void copy_rows(const ConstTensorView& src, const TensorView& dst, const int32_t* index, bool index_is_destination,
               std::size_t rows, std::size_t cols, cudaStream_t stream) {
  const unsigned threads = static_cast<unsigned>(std::min<std::size_t>(256, (cols + 31) / 32 * 32));
  pdl::launch(copy_rows_kernel<T>, static_cast<unsigned>(rows), threads, 0, stream, static_cast<const T*>(src.data),
              src.ld, static_cast<T*>(dst.data), dst.ld, index, index_is_destination, static_cast<int>(cols));
}

struct CachedParams {
  const void* q;
  std::size_t ldq;
  const void* k;
  std::size_t ldk;
  const void* v;
  std::size_t ldv;
  void* out;
  std::size_t ldo;
  const int32_t* seq_starts;
  int num_seqs;
  const int32_t* lengths;
  const int32_t* page_starts;
  const int32_t* pages;
  int page_size, heads, group, head_dim;
  float scale;
  int splits;
  float* workspace;  // splits > 1: per (token, head, split) head_dim values, then the max and sum
  int window;              // 0: every entry; else the entries from window_start (ops/kv_cache.h)
  const int32_t* anchors;  // per token, or null: the token's own entry (cache length − 1)
};

// The first entry token t reads out of its n: ops::window_start on the device.
__device__ __forceinline__ int first_entry(const CachedParams& p, int t, int n) {
  if (p.window <= 0) return 0;
  const long long anchor = p.anchors ? p.anchors[t] : n - 1;
  const long long first = anchor - p.window + 1;
  return static_cast<int>(first < 0 ? 0 : first > n ? n : first);
}

template <typename T, int VPL>
__global__ void cached_attention_kernel(CachedParams p) {
  pdl::wait_for_predecessor();
  const int t = static_cast<int>(blockIdx.x), h = static_cast<int>(blockIdx.y), split = static_cast<int>(blockIdx.z);
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int n = p.lengths[t], first = n > 0 ? first_entry(p, t, n) : 0;
  T* out = static_cast<T*>(p.out) + static_cast<std::size_t>(t) * p.ldo + static_cast<std::size_t>(h) * p.head_dim;
  // This block's run of entries [j0, j1) out of [first, n).
  const int per = max((n - first + p.splits - 1) / p.splits, kMinRun);
  const int j0 = min(n, first + split * per), j1 = min(n, j0 + per);
  float* ws = p.splits > 1 ? p.workspace + ((static_cast<std::size_t>(t) * p.heads + h) * p.splits + split) *
                                               (static_cast<std::size_t>(p.head_dim) + 2)
                           : nullptr;
  if (n <= 0 || j0 >= j1) {
    if (p.splits == 1) {
      for (int d = static_cast<int>(threadIdx.x); d < p.head_dim; d += static_cast<int>(blockDim.x))
        elem::store(out + d, 0.0f);
    } else if (threadIdx.x == 0) {
      ws[p.head_dim] = -INFINITY;  // an empty run: weight 0 in the merge
      ws[p.head_dim + 1] = 0.0f;
    }
    return;
  }
  // The token's sequence: the last start not past it.
  int lo = 0, hi = p.num_seqs;  // seq_starts[lo] <= t < seq_starts[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (p.seq_starts[mid] <= t) lo = mid;
    else hi = mid;
  }
  const int32_t* pages = p.pages + p.page_starts[lo];
  const int kvh = h / p.group;
  const T* q = static_cast<const T*>(p.q) + static_cast<std::size_t>(t) * p.ldq + static_cast<std::size_t>(h) * p.head_dim;
  float qr[VPL], acc[VPL];
#pragma unroll
  for (int i = 0; i < VPL; ++i) {
    const int d = lane + 32 * i;
    qr[i] = d < p.head_dim ? elem::load(q + d) * p.scale : 0.0f;
    acc[i] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  const T* kb = static_cast<const T*>(p.k) + static_cast<std::size_t>(kvh) * p.head_dim;
  const T* vb = static_cast<const T*>(p.v) + static_cast<std::size_t>(kvh) * p.head_dim;
  for (int j = j0 + warp; j < j1; j += kWarps) {
    const std::size_t row = static_cast<std::size_t>(pages[j / p.page_size]) * p.page_size + j % p.page_size;
    const T* kr = kb + row * p.ldk;
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
      const int d = lane + 32 * i;
      if (d < p.head_dim) s += qr[i] * elem::load(kr + d);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    const float m_new = fmaxf(m, s);
    const float corr = __expf(m - m_new), w = __expf(s - m_new);
    l = l * corr + w;
    const T* vr = vb + row * p.ldv;
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
      const int d = lane + 32 * i;
      acc[i] = acc[i] * corr + (d < p.head_dim ? w * elem::load(vr + d) : 0.0f);
    }
    m = m_new;
  }
  // Merge the warps: each scales its sums to the common maximum.
  __shared__ float sm_m[kWarps], sm_l[kWarps];
  __shared__ float sm_acc[kWarps][VPL * 32];
  if (lane == 0) {
    sm_m[warp] = m;
    sm_l[warp] = l;
  }
#pragma unroll
  for (int i = 0; i < VPL; ++i) sm_acc[warp][lane + 32 * i] = acc[i];
  __syncthreads();
  float mx = -INFINITY;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, sm_m[w]);
  float total = 0.0f;
  float f[kWarps];
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    f[w] = sm_m[w] == -INFINITY ? 0.0f : __expf(sm_m[w] - mx);
    total += sm_l[w] * f[w];
  }
  for (int d = static_cast<int>(threadIdx.x); d < p.head_dim; d += static_cast<int>(blockDim.x)) {
    float o = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) o += sm_acc[w][d] * f[w];
    if (p.splits == 1) elem::store(out + d, o / total);
    else ws[d] = o;
  }
  if (p.splits > 1 && threadIdx.x == 0) {
    ws[p.head_dim] = mx;
    ws[p.head_dim + 1] = total;
  }
}

// The sequence of token t: the last start not past it.
__device__ __forceinline__ int sequence_of(const int32_t* seq_starts, int num_seqs, int t) {
  int lo = 0, hi = num_seqs;  // seq_starts[lo] <= t < seq_starts[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (seq_starts[mid] <= t) lo = mid;
    else hi = mid;
  }
  return lo;
}

// Folds another (maximum, sum, weighted values) state into this one, both scaled to the larger
// maximum; an empty state (maximum -inf) weighs 0.
template <int N>
__device__ __forceinline__ void fold_state(float& m, float& l, float (&acc)[N], float m_o, float l_o,
                                           const float (&acc_o)[N]) {
  const float mx = fmaxf(m, m_o);
  const float f = m == -INFINITY ? 0.0f : __expf(m - mx), f_o = m_o == -INFINITY ? 0.0f : __expf(m_o - mx);
  l = l * f + l_o * f_o;
#pragma unroll
  for (int i = 0; i < N; ++i) acc[i] = acc[i] * f + acc_o[i] * f_o;
  m = mx;
}

// LPE: lanes per entry (head_dim / kVec<T>); G: the most query heads per KV head it serves
// (p.group <= G; the heads past p.group are computed on zeros and dropped).
template <typename T, int LPE, int G>
__global__ void __launch_bounds__(kWarps * 32) grouped_attention_kernel(CachedParams p) {
  constexpr int V = elem::kVec<T>, HD = LPE * V, EPW = 32 / LPE, U = 2;
  constexpr int kStep = kWarps * EPW;  // entries one pass of the block covers
  pdl::wait_for_predecessor();
  const int t = static_cast<int>(blockIdx.x), kvh = static_cast<int>(blockIdx.y), split = static_cast<int>(blockIdx.z);
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int sub = lane / LPE, part = lane % LPE;
  const int n = p.lengths[t], group = p.group, h0 = kvh * group, first = n > 0 ? first_entry(p, t, n) : 0;
  T* out = static_cast<T*>(p.out) + static_cast<std::size_t>(t) * p.ldo + static_cast<std::size_t>(h0) * HD;
  const int per = max((n - first + p.splits - 1) / p.splits, kMinRun);
  const int j0 = min(n, first + split * per), j1 = min(n, j0 + per);
  // Head g's partial result in the workspace (splits > 1).
  auto ws_of = [&](int g) {
    return p.workspace + ((static_cast<std::size_t>(t) * p.heads + h0 + g) * p.splits + split) * (HD + 2);
  };
  if (n <= 0 || j0 >= j1) {
    if (p.splits == 1) {
      for (int d = static_cast<int>(threadIdx.x); d < group * HD; d += static_cast<int>(blockDim.x))
        elem::store(out + d, 0.0f);
    } else if (static_cast<int>(threadIdx.x) < group) {
      float* ws = ws_of(static_cast<int>(threadIdx.x));
      ws[HD] = -INFINITY;  // an empty run: weight 0 in the merge
      ws[HD + 1] = 0.0f;
    }
    return;
  }
  const int32_t* pages = p.pages + p.page_starts[sequence_of(p.seq_starts, p.num_seqs, t)];
  // This lane's V values of each head's (pre-scaled) query.
  float q[G][V];
  const T* qt = static_cast<const T*>(p.q) + static_cast<std::size_t>(t) * p.ldq + static_cast<std::size_t>(h0) * HD;
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int i = 0; i < V; ++i) q[g][i] = g < group ? elem::load(qt + g * HD + part * V + i) * p.scale : 0.0f;
  float m[G], l[G], acc[G][V];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.0f;
#pragma unroll
    for (int i = 0; i < V; ++i) acc[g][i] = 0.0f;
  }
  const T* kb = static_cast<const T*>(p.k) + static_cast<std::size_t>(kvh) * HD + part * V;
  const T* vb = static_cast<const T*>(p.v) + static_cast<std::size_t>(kvh) * HD + part * V;
  // The loop runs on the warp's first entry, so every lane of a warp takes the same trips (the
  // shuffles need them all); a run whose entry lies past the end computes on zeros and drops it.
  for (int jw = j0 + warp * EPW; jw < j1; jw += U * kStep) {
    // Both entries' K and V loads are issued before any arithmetic waits on them.
    float kf[U][V], vf[U][V];
    bool live[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int e = jw + sub + u * kStep;
      live[u] = e < j1;
      if (live[u]) {
        const std::size_t row = static_cast<std::size_t>(pages[e / p.page_size]) * p.page_size + e % p.page_size;
        elem::load_vec(kb + row * p.ldk, kf[u]);
        elem::load_vec(vb + row * p.ldv, vf[u]);
      } else {
#pragma unroll
        for (int i = 0; i < V; ++i) kf[u][i] = vf[u][i] = 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float s[G];
#pragma unroll
      for (int g = 0; g < G; ++g) {
        s[g] = 0.0f;
#pragma unroll
        for (int i = 0; i < V; ++i) s[g] += q[g][i] * kf[u][i];
      }
      // The run's lanes sum their parts (every lane of the warp shuffles, live or not).
#pragma unroll
      for (int o = LPE / 2; o > 0; o >>= 1)
#pragma unroll
        for (int g = 0; g < G; ++g) s[g] += __shfl_xor_sync(0xffffffffu, s[g], o);
      if (live[u]) {
#pragma unroll
        for (int g = 0; g < G; ++g) {
          const float m_new = fmaxf(m[g], s[g]);
          const float corr = __expf(m[g] - m_new), w = __expf(s[g] - m_new);
          l[g] = l[g] * corr + w;
#pragma unroll
          for (int i = 0; i < V; ++i) acc[g][i] = acc[g][i] * corr + w * vf[u][i];
          m[g] = m_new;
        }
      }
    }
  }
  // Merge the runs of the warp: lanes `part` of every run hold the same values' sums.
#pragma unroll
  for (int o = LPE; o < 32; o <<= 1)
#pragma unroll
    for (int g = 0; g < G; ++g) {
      float acc_o[V];
#pragma unroll
      for (int i = 0; i < V; ++i) acc_o[i] = __shfl_xor_sync(0xffffffffu, acc[g][i], o);
      const float m_o = __shfl_xor_sync(0xffffffffu, m[g], o), l_o = __shfl_xor_sync(0xffffffffu, l[g], o);
      fold_state(m[g], l[g], acc[g], m_o, l_o, acc_o);
    }
  // Then the warps, through shared memory.
  __shared__ float sm_m[kWarps][G], sm_l[kWarps][G];
  __shared__ float sm_acc[kWarps][G][HD];
  if (sub == 0) {
#pragma unroll
    for (int g = 0; g < G; ++g) {
      if (part == 0) {
        sm_m[warp][g] = m[g];
        sm_l[warp][g] = l[g];
      }
#pragma unroll
      for (int i = 0; i < V; ++i) sm_acc[warp][g][part * V + i] = acc[g][i];
    }
  }
  __syncthreads();
  for (int x = static_cast<int>(threadIdx.x); x < group * HD; x += static_cast<int>(blockDim.x)) {
    const int g = x / HD, d = x % HD;
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, sm_m[w][g]);
    float total = 0.0f, o = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float f = sm_m[w][g] == -INFINITY ? 0.0f : __expf(sm_m[w][g] - mx);
      total += sm_l[w][g] * f;
      o += sm_acc[w][g][d] * f;
    }
    if (p.splits == 1) {
      elem::store(out + x, o / total);
    } else {
      float* ws = ws_of(g);
      ws[d] = o;
      if (d == 0) {
        ws[HD] = mx;
        ws[HD + 1] = total;
      }
    }
  }
}

// Merges the splits of one (token, head): each split's sums scaled to the common maximum.
template <typename T>
__global__ void merge_splits_kernel(CachedParams p) {
  pdl::wait_for_predecessor();
  const int t = static_cast<int>(blockIdx.x), h = static_cast<int>(blockIdx.y);
  T* out = static_cast<T*>(p.out) + static_cast<std::size_t>(t) * p.ldo + static_cast<std::size_t>(h) * p.head_dim;
  const float* ws = p.workspace + (static_cast<std::size_t>(t) * p.heads + h) * p.splits * (p.head_dim + 2);
  const std::size_t stride = static_cast<std::size_t>(p.head_dim) + 2;
  float mx = -INFINITY;
  for (int s = 0; s < p.splits; ++s) mx = fmaxf(mx, ws[s * stride + p.head_dim]);
  if (mx == -INFINITY) {  // no entries (padding token)
    for (int d = static_cast<int>(threadIdx.x); d < p.head_dim; d += static_cast<int>(blockDim.x))
      elem::store(out + d, 0.0f);
    return;
  }
  float total = 0.0f;
  for (int s = 0; s < p.splits; ++s) {
    const float m = ws[s * stride + p.head_dim];
    if (m != -INFINITY) total += ws[s * stride + p.head_dim + 1] * __expf(m - mx);
  }
  for (int d = static_cast<int>(threadIdx.x); d < p.head_dim; d += static_cast<int>(blockDim.x)) {
    float o = 0.0f;
    for (int s = 0; s < p.splits; ++s) {
      const float m = ws[s * stride + p.head_dim];
      if (m != -INFINITY) o += ws[s * stride + d] * __expf(m - mx);
    }
    elem::store(out + d, o / total);
  }
}

// Launches the grouped kernel when the shapes fit it (see the top of the file); false otherwise.
template <typename T, int LPE>
void launch_grouped_lpe(const CachedParams& p, const dim3& grid, cudaStream_t stream) {
  if (p.group <= 1) pdl::launch(grouped_attention_kernel<T, LPE, 1>, grid, kWarps * 32, 0, stream, p);
  else if (p.group <= 2) pdl::launch(grouped_attention_kernel<T, LPE, 2>, grid, kWarps * 32, 0, stream, p);
  else if (p.group <= 4) pdl::launch(grouped_attention_kernel<T, LPE, 4>, grid, kWarps * 32, 0, stream, p);
  else pdl::launch(grouped_attention_kernel<T, LPE, 8>, grid, kWarps * 32, 0, stream, p);
}

template <typename T>
bool launch_grouped(const CachedAttentionArgs& a, const CachedParams& p, std::size_t tokens, cudaStream_t stream) {
  const std::size_t lanes = a.head_dim / elem::kVec<T>;
  if (a.head_dim % elem::kVec<T> != 0 || (lanes != 8 && lanes != 16 && lanes != 32) || p.group > 8) return false;
  if (!elem::vectorizable<T>(a.k_cache.data, a.k_cache.ld, a.head_dim) ||
      !elem::vectorizable<T>(a.v_cache.data, a.v_cache.ld, a.head_dim))
    return false;
  const dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>(a.kv_heads), static_cast<unsigned>(p.splits));
  if (lanes == 8) launch_grouped_lpe<T, 8>(p, grid, stream);
  else if (lanes == 16) launch_grouped_lpe<T, 16>(p, grid, stream);
  else launch_grouped_lpe<T, 32>(p, grid, stream);
  return true;
}

template <typename T>
void launch_cached(const CachedAttentionArgs& a, std::size_t tokens, cudaStream_t stream) {
  CachedParams p{};
  p.q = a.q.data;
  p.ldq = a.q.ld;
  p.k = a.k_cache.data;
  p.ldk = a.k_cache.ld;
  p.v = a.v_cache.data;
  p.ldv = a.v_cache.ld;
  p.out = a.out.data;
  p.ldo = a.out.ld;
  p.seq_starts = a.seq_starts;
  p.num_seqs = static_cast<int>(a.num_seqs);
  p.lengths = a.cache_lengths;
  p.page_starts = a.page_starts;
  p.pages = a.pages;
  p.page_size = static_cast<int>(a.page_size);
  p.heads = static_cast<int>(a.heads);
  p.group = static_cast<int>(a.heads / a.kv_heads);
  p.head_dim = static_cast<int>(a.head_dim);
  p.scale = a.scale;
  // Splits from the launched token count and the shapes alone (host values fixed in a captured
  // graph), never past what the workspace holds.
  p.splits = a.workspace != nullptr ? static_cast<int>(cached_attention_splits(tokens, a.heads, a.kv_heads,
                                                                               a.head_dim, a.workspace_floats))
                                    : 1;
  p.workspace = a.workspace;
  p.window = static_cast<int>(a.window);
  p.anchors = a.window_anchors;
  if (!launch_grouped<T>(a, p, tokens, stream)) {
    const dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>(a.heads), static_cast<unsigned>(p.splits));
    const int vpl = static_cast<int>((a.head_dim + 31) / 32);
    if (vpl <= 1) pdl::launch(cached_attention_kernel<T, 1>, grid, kWarps * 32, 0, stream, p);
    else if (vpl <= 2) pdl::launch(cached_attention_kernel<T, 2>, grid, kWarps * 32, 0, stream, p);
    else if (vpl <= 4) pdl::launch(cached_attention_kernel<T, 4>, grid, kWarps * 32, 0, stream, p);
    else if (vpl <= 8) pdl::launch(cached_attention_kernel<T, 8>, grid, kWarps * 32, 0, stream, p);
    else pdl::launch(cached_attention_kernel<T, 16>, grid, kWarps * 32, 0, stream, p);
  }
  if (p.splits > 1)
    pdl::launch(merge_splits_kernel<T>, dim3(static_cast<unsigned>(tokens), static_cast<unsigned>(a.heads)), 128, 0,
                stream, p);
}

}  // namespace

std::size_t cached_attention_splits(std::size_t tokens, std::size_t heads, std::size_t kv_heads,
                                    std::size_t head_dim, std::size_t workspace_floats) {
  // Enough blocks to fill the device when few tokens decode: the grouped kernel runs one block
  // per (token, KV head, split) (the generic one, per query head, then has more than enough).
  // The executors pad the token count up to a bucket of 8 (backends/cuda/batch_buckets.h), so as
  // few as one in 8 launched tokens may be real: the count assumes that many. Splitting more than
  // needed costs little (each run at least kMinRun entries, empty runs exit at once, the merge
  // reads a few partial results per head); splitting less leaves a lone sequence's thousands of
  // entries to a few blocks. The workspace holds one partial result per (token, query head, split).
  const std::size_t blocks = std::max<std::size_t>((tokens + 7) / 8 * std::max<std::size_t>(kv_heads, 1), 1);
  std::size_t splits = std::min<std::size_t>(kMaxSplits, (kTargetBlocks + blocks - 1) / blocks);
  while (splits > 1 && tokens * heads * splits * (head_dim + 2) > workspace_floats) --splits;
  return std::max<std::size_t>(splits, 1);
}

void kv_write_cuda(const KvWriteArgs& a, cudaStream_t stream) {
  check(a.k.dtype == a.k_cache.dtype && a.v.dtype == a.v_cache.dtype, "kv_write: the cache's type differs");
  if (a.rows == 0) return;
  elem::dispatch(a.k.dtype, [&](auto tag) {
    using T = decltype(tag);
    copy_rows<T>(a.k, a.k_cache, a.cache_rows, true, a.rows, a.cols, stream);
    copy_rows<T>(a.v, a.v_cache, a.cache_rows, true, a.rows, a.cols, stream);
  });
}

void inject_rows_cuda(const InjectRowsArgs& a, cudaStream_t stream) {
  check(a.src.dtype == a.out.dtype, "inject_rows: source and rows differ in type");
  if (a.rows == 0) return;
  elem::dispatch(a.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    copy_rows<T>(a.src, a.out, a.rows_of, false, a.rows, a.cols, stream);
  });
}

void cached_attention_cuda(const CachedAttentionArgs& a, std::size_t tokens, cudaStream_t stream) {
  check_cached_attention(a);
  static_assert(kCachedAttentionMaxHeadDim <= 16 * 32, "the generic kernel holds 16 values a lane");
  check(a.window < (std::size_t{1} << 31), "cached_attention: window ", a.window, " too large");
  check(a.q.dtype == a.k_cache.dtype && a.q.dtype == a.v_cache.dtype && a.q.dtype == a.out.dtype,
        "cached_attention: operands differ in type");
  if (tokens == 0) return;
  elem::dispatch(a.q.dtype, [&](auto tag) { launch_cached<decltype(tag)>(a, tokens, stream); });
}

}  // namespace il::ops
