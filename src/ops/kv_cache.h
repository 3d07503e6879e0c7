// The KV cache ops of generation (plan::KvWriteStep, CachedAttentionStep, InjectRowsStep): store a
// batch's keys and values in cache rows, attend over a sequence's cached entries through its page
// list, and overwrite chosen token rows with rows of another buffer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "ops/tensor_view.h"

namespace il::ops {

// k_cache[cache_rows[r], :cols] = k[r, :cols] and the same for v, r < rows.
struct KvWriteArgs {
  ConstTensorView k, v;
  TensorView k_cache, v_cache;
  const int32_t* cache_rows = nullptr;
  std::size_t rows = 0, cols = 0;
};

// Token t of sequence s (seq_starts) attends, per query head h, to the first cache_lengths[t]
// entries of s's cache through kv head h / (heads / kv_heads): entry j is row
// pages[page_starts[s] + j / page_size] · page_size + j % page_size of k_cache and v_cache.
// softmax(scale · q · kᵀ) · v, in f32.
struct CachedAttentionArgs {
  ConstTensorView q;
  ConstTensorView k_cache, v_cache;
  TensorView out;
  const int32_t* seq_starts = nullptr;  // [num_seqs + 1]
  std::size_t num_seqs = 0;
  const int32_t* cache_lengths = nullptr;  // one per token
  const int32_t* page_starts = nullptr;    // [num_seqs + 1]
  const int32_t* pages = nullptr;
  std::size_t page_size = 0;
  std::size_t heads = 0, kv_heads = 0, head_dim = 0;
  float scale = 1.0f;
  // CUDA: scratch for splitting each token's entries over several blocks (cached_attention_splits
  // says how many fit); null: one block per token and head. The CPU op ignores it.
  float* workspace = nullptr;
  std::size_t workspace_floats = 0;
  // Sliding window (plan::CachedAttentionStep): 0 none; else token t reads entries
  // max(0, anchor − window + 1) .. cache_lengths[t] − 1, anchor = window_anchors[t], or
  // cache_lengths[t] − 1 when window_anchors is null.
  std::size_t window = 0;
  const int32_t* window_anchors = nullptr;  // one per token, or null
};

// out[t, :cols] = src[rows_of[t], :cols] for t < rows where rows_of[t] ≥ 0.
struct InjectRowsArgs {
  ConstTensorView src;
  TensorView out;
  const int32_t* rows_of = nullptr;
  std::size_t rows = 0, cols = 0;
};

inline constexpr std::size_t kCachedAttentionMaxHeadDim = 512;  // Gemma-4's global layers
void check_cached_attention(const CachedAttentionArgs& a, const char* what = "cached_attention");
// The first entry token t reads (0 without a window; at most its cache length).
std::size_t window_start(const CachedAttentionArgs& a, std::size_t t);

void kv_write_cpu(const KvWriteArgs& a, ThreadPool& pool);
void cached_attention_cpu(const CachedAttentionArgs& a, ThreadPool& pool);
void inject_rows_cpu(const InjectRowsArgs& a, ThreadPool& pool);

}  // namespace il::ops
