// The KV cache ops (ops/kv_cache.h) on the GPU.
//
// kv_write / inject_rows: one block per row, a plain strided copy (rows whose index is negative,
// the padding of a bucketed launch, are skipped).
//
// cached_attention: one block per (token, query head, split of the entries), four warps. The
// entries a token reads are cut into `splits` equal runs (flash-decoding): a decode step of one
// sequence would otherwise run only `heads` blocks, each walking thousands of entries. Each warp
// takes every fourth entry of its block's run: the lanes hold the query's head_dim values (VPL per
// lane), a warp-wide dot product gives the score, and the warp keeps its own running maximum, sum
// and weighted value sum (the online softmax); the four are merged in the block. With one split
// the block writes the output; with several it writes its (maximum, sum, weighted sum) to the
// workspace and a second kernel merges the splits of each (token, head). Arithmetic in f32
// whatever the cache's type. A token whose cache length is 0 (bucket padding) writes zeros.
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
constexpr std::size_t kMaxSplits = 32;

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
};

template <typename T, int VPL>
__global__ void cached_attention_kernel(CachedParams p) {
  pdl::wait_for_predecessor();
  const int t = static_cast<int>(blockIdx.x), h = static_cast<int>(blockIdx.y), split = static_cast<int>(blockIdx.z);
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int n = p.lengths[t];
  T* out = static_cast<T*>(p.out) + static_cast<std::size_t>(t) * p.ldo + static_cast<std::size_t>(h) * p.head_dim;
  // This block's run of entries [j0, j1).
  const int per = (n + p.splits - 1) / p.splits;
  const int j0 = min(n, split * per), j1 = min(n, j0 + per);
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
  // Splits from the launched token count alone (a host value in the graph key), never past what
  // the workspace holds.
  p.splits = a.workspace != nullptr ? static_cast<int>(cached_attention_splits(tokens, a.heads, a.head_dim,
                                                                               a.workspace_floats))
                                    : 1;
  p.workspace = a.workspace;
  const dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>(a.heads), static_cast<unsigned>(p.splits));
  const int vpl = static_cast<int>((a.head_dim + 31) / 32);
  if (vpl <= 1) pdl::launch(cached_attention_kernel<T, 1>, grid, kWarps * 32, 0, stream, p);
  else if (vpl <= 2) pdl::launch(cached_attention_kernel<T, 2>, grid, kWarps * 32, 0, stream, p);
  else if (vpl <= 4) pdl::launch(cached_attention_kernel<T, 4>, grid, kWarps * 32, 0, stream, p);
  else pdl::launch(cached_attention_kernel<T, 8>, grid, kWarps * 32, 0, stream, p);
  if (p.splits > 1)
    pdl::launch(merge_splits_kernel<T>, dim3(static_cast<unsigned>(tokens), static_cast<unsigned>(a.heads)), 128, 0,
                stream, p);
}

}  // namespace

std::size_t cached_attention_splits(std::size_t tokens, std::size_t heads, std::size_t head_dim,
                                    std::size_t workspace_floats) {
  // Enough blocks to fill the device (about 4 per SM of an H100 / H200) when few tokens decode;
  // one split when the tokens and heads already make that many.
  const std::size_t blocks = std::max<std::size_t>(tokens * heads, 1);
  std::size_t splits = std::min<std::size_t>(kMaxSplits, (512 + blocks - 1) / blocks);
  while (splits > 1 && tokens * heads * splits * (head_dim + 2) > workspace_floats) splits /= 2;
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
  check(a.q.dtype == a.k_cache.dtype && a.q.dtype == a.v_cache.dtype && a.q.dtype == a.out.dtype,
        "cached_attention: operands differ in type");
  if (tokens == 0) return;
  elem::dispatch(a.q.dtype, [&](auto tag) { launch_cached<decltype(tag)>(a, tokens, stream); });
}

}  // namespace il::ops
