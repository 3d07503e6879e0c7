#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "ops/kv_cache.h"

namespace il::ops {

void check_cached_attention(const CachedAttentionArgs& a, const char* what) {
  check(a.q.data && a.k_cache.data && a.v_cache.data && a.out.data && a.seq_starts && a.cache_lengths &&
            a.page_starts && a.pages,
        what, ": null operand");
  check(a.heads > 0 && a.kv_heads > 0 && a.heads % a.kv_heads == 0, what, ": heads (", a.heads,
        ") must be a multiple of kv_heads (", a.kv_heads, ")");
  check(a.head_dim > 0 && a.head_dim <= kCachedAttentionMaxHeadDim, what, ": head_dim ", a.head_dim, " outside 1..",
        kCachedAttentionMaxHeadDim);
  check(a.page_size > 0, what, ": page size 0");
  check(a.q.ld >= a.heads * a.head_dim && a.out.ld >= a.heads * a.head_dim &&
            a.k_cache.ld >= a.kv_heads * a.head_dim && a.v_cache.ld >= a.kv_heads * a.head_dim,
        what, ": row stride smaller than heads × head_dim");
}

void kv_write_cpu(const KvWriteArgs& a, ThreadPool& pool) {
  const float* k = f32_data(a.k, "kv_write");
  const float* v = f32_data(a.v, "kv_write");
  float* kc = f32_data(a.k_cache, "kv_write");
  float* vc = f32_data(a.v_cache, "kv_write");
  pool.parallel_for(a.rows, 64, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const std::size_t dst = static_cast<std::size_t>(a.cache_rows[r]);
      std::memcpy(kc + dst * a.k_cache.ld, k + r * a.k.ld, a.cols * sizeof(float));
      std::memcpy(vc + dst * a.v_cache.ld, v + r * a.v.ld, a.cols * sizeof(float));
    }
  });
}

std::size_t window_start(const CachedAttentionArgs& a, std::size_t t) {
  if (a.window == 0) return 0;
  const int64_t len = a.cache_lengths[t];
  const int64_t anchor = a.window_anchors ? a.window_anchors[t] : len - 1;
  const int64_t first = anchor - static_cast<int64_t>(a.window) + 1;
  return static_cast<std::size_t>(std::clamp<int64_t>(first, 0, len));
}

void cached_attention_cpu(const CachedAttentionArgs& a, ThreadPool& pool) {
  check_cached_attention(a);
  const float* q = f32_data(a.q, "cached_attention");
  const float* kc = f32_data(a.k_cache, "cached_attention");
  const float* vc = f32_data(a.v_cache, "cached_attention");
  float* out = f32_data(a.out, "cached_attention");
  const std::size_t tokens = static_cast<std::size_t>(a.seq_starts[a.num_seqs]);
  const std::size_t group = a.heads / a.kv_heads, hd = a.head_dim, P = a.page_size;
  // One work item per (token, head): decode batches hold one token per sequence, so the heads
  // are what spreads the work over the threads.
  pool.parallel_for(tokens * a.heads, 4, [&](std::size_t i0, std::size_t i1) {
    std::vector<float> scores;
    std::vector<float> acc(hd);
    for (std::size_t i = i0; i < i1; ++i) {
      const std::size_t t = i / a.heads, h = i % a.heads, kvh = h / group;
      const std::size_t s = static_cast<std::size_t>(
          std::upper_bound(a.seq_starts, a.seq_starts + a.num_seqs + 1, static_cast<int32_t>(t)) - a.seq_starts - 1);
      const int32_t* pages = a.pages + a.page_starts[s];
      const std::size_t len = static_cast<std::size_t>(a.cache_lengths[t]);
      const std::size_t first = window_start(a, t);
      const std::size_t n = len - first;
      const float* qr = q + t * a.q.ld + h * hd;
      const auto row_of = [&](std::size_t i) {
        const std::size_t j = first + i;
        return static_cast<std::size_t>(pages[j / P]) * P + j % P;
      };
      scores.resize(n);
      float mx = -INFINITY;
      for (std::size_t j = 0; j < n; ++j) {
        const float* kr = kc + row_of(j) * a.k_cache.ld + kvh * hd;
        float dot = 0.0f;
        for (std::size_t d = 0; d < hd; ++d) dot += qr[d] * kr[d];
        scores[j] = dot * a.scale;
        mx = std::max(mx, scores[j]);
      }
      float sum = 0.0f;
      for (std::size_t j = 0; j < n; ++j) {
        scores[j] = std::exp(scores[j] - mx);
        sum += scores[j];
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (std::size_t j = 0; j < n; ++j) {
        const float* vr = vc + row_of(j) * a.v_cache.ld + kvh * hd;
        const float p = scores[j];
        for (std::size_t d = 0; d < hd; ++d) acc[d] += p * vr[d];
      }
      float* o = out + t * a.out.ld + h * hd;
      if (n == 0) {  // a window that holds no entry: zeros, as the CUDA kernels give
        std::fill(o, o + hd, 0.0f);
        continue;
      }
      const float inv = 1.0f / sum;
      for (std::size_t d = 0; d < hd; ++d) o[d] = acc[d] * inv;
    }
  });
}

void inject_rows_cpu(const InjectRowsArgs& a, ThreadPool& pool) {
  const float* src = f32_data(a.src, "inject_rows");
  float* out = f32_data(a.out, "inject_rows");
  pool.parallel_for(a.rows, 64, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r)
      if (a.rows_of[r] >= 0)
        std::memcpy(out + r * a.out.ld, src + static_cast<std::size_t>(a.rows_of[r]) * a.src.ld,
                    a.cols * sizeof(float));
  });
}

}  // namespace il::ops
