// Ragged multi-head attention over packed sequences: sequence s owns rows
// seq_starts[s] .. seq_starts[s+1] of q, k, v and out, and a row attends only to keys of its own
// sequence. No padding, and no n×n score matrix: each worker holds one block of score rows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "core/thread_pool.h"

namespace il::ops {

enum class MaskMode { kBidirectional, kCausal };

struct AttentionArgs {
  const float* q = nullptr;
  std::size_t ldq = 0;
  const float* k = nullptr;
  std::size_t ldk = 0;
  const float* v = nullptr;
  std::size_t ldv = 0;
  float* out = nullptr;
  std::size_t ldo = 0;
  const int32_t* seq_starts = nullptr;  // [num_seqs + 1], seq_starts[0] == 0
  std::size_t num_seqs = 0;
  std::size_t heads = 0;
  std::size_t kv_heads = 0;  // GQA: query head h reads kv head h / (heads / kv_heads)
  std::size_t head_dim = 0;
  float scale = 1.0f;        // applied to q·k
  MaskMode mask = MaskMode::kBidirectional;
  std::size_t window = 0;    // 0 = unlimited; else keys with |i − j| ≤ window / 2
  // Optional, one per sequence: only the sequence's first key_limits[s] keys are read by any of
  // its rows (plan::Batch::key_limits; on CUDA, AttentionCudaArgs::key_limits, the flash kernel).
  const int32_t* key_limits = nullptr;
  // Optional, one per sequence, with kCausal: every row also sees the sequence's first
  // causal_prefix[s] keys (a prefix-LM mask: DeepSeek-OCR-2's encoder, bidirectional over the
  // image patches, causal over the queries after them). CPU only so far.
  const int32_t* causal_prefix = nullptr;
};

// The checks that need no look at seq_starts, which the CUDA launchers cannot read (it lives on
// the device): operands present, heads a multiple of kv_heads, head_dim in 1..max_head_dim, row
// strides wide enough. `what` names the op in the messages. check_attention adds the offsets.
// Args: AttentionArgs, or the CUDA launchers' AttentionCudaArgs (the same fields).
template <typename Args>
inline void check_attention_shape(const Args& a, std::size_t max_head_dim, const char* what = "attention") {
  check(a.q && a.k && a.v && a.out && a.seq_starts, what, ": null operand");
  check(a.heads > 0 && a.kv_heads > 0 && a.heads % a.kv_heads == 0, what, ": heads (", a.heads,
        ") must be a multiple of kv_heads (", a.kv_heads, ")");
  check(a.head_dim > 0 && a.head_dim <= max_head_dim, what, ": head_dim ", a.head_dim, " outside 1..", max_head_dim);
  check(a.ldq >= a.heads * a.head_dim && a.ldo >= a.heads * a.head_dim && a.ldk >= a.kv_heads * a.head_dim &&
            a.ldv >= a.kv_heads * a.head_dim,
        what, ": row stride smaller than heads × head_dim");
}

void check_attention(const AttentionArgs& a);
void attention_cpu(const AttentionArgs& a, ThreadPool& pool);

// Only each sequence's first query row (its first token), against all of the sequence's keys
// under the same mask: out row s (not row seq_starts[s]) gets sequence s's result, zeros for an
// empty sequence. The same arithmetic as attention_cpu's first row. A CLS-pooled
// model's last layer needs nothing else.
void attention_first_cpu(const AttentionArgs& a, ThreadPool& pool);
// The same for each sequence's last query row (a last-token-pooled model's last layer; under a
// causal mask the one row that sees every key).
void attention_last_cpu(const AttentionArgs& a, ThreadPool& pool);

}  // namespace il::ops
