#include "ops/attention_dispatch_cuda.h"

#include <cmath>

#include "core/env.h"
#include "core/error.h"
#include "ops/attention_half_cuda.h"
#include "ops/attention_wgmma_cuda.h"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

bool is_half(DType t) { return t == DType::kF16 || t == DType::kBF16; }

HalfAttentionArgs half_args(const AttentionCudaArgs& a) {
  return {a.q, a.ldq, a.k, a.ldk, a.v, a.ldv, a.out, a.ldo, a.seq_starts, a.num_seqs, a.heads, a.kv_heads,
          a.head_dim, a.scale, a.mask, a.window, a.type == DType::kF16 ? HalfType::kF16 : HalfType::kBF16, a.rows};
}

// The shape every kernel needs: heads a multiple of kv_heads, head_dim and strides that fit.
bool shape_ok(const AttentionCudaArgs& a, std::size_t max_head_dim) {
  return a.q && a.k && a.v && a.out && a.seq_starts && a.heads > 0 && a.kv_heads > 0 && a.heads % a.kv_heads == 0 &&
         a.head_dim >= 1 && a.head_dim <= max_head_dim && a.ldq >= a.heads * a.head_dim &&
         a.ldo >= a.heads * a.head_dim && a.ldk >= a.kv_heads * a.head_dim && a.ldv >= a.kv_heads * a.head_dim &&
         a.heads <= 65535 && a.num_seqs < (1u << 31);
}

// The tensor-core kernels take the row max on raw scores and scale it once: an order-preserving
// (positive, finite) scale only.
bool tensor_core_ok(const AttentionCudaArgs& a) {
  return a.queries == AttentionQueries::kAll && is_half(a.type) && a.scale > 0.0f && std::isfinite(a.scale) &&
         shape_ok(a, kHalfAttentionMaxHeadDim) && (a.max_seq_len + 63) / 64 <= 65535;
}

// IL_ATTENTION_WGMMA=0 leaves both Hopper kernels out, IL_ATTENTION_TMA=0 the TMA-fed one.
bool wgmma_allowed() {
  static const bool on = env::on_unless_zero("IL_ATTENTION_WGMMA");
  return on;
}
bool tma_allowed() {
  static const bool on = env::on_unless_zero("IL_ATTENTION_TMA");
  return on;
}

// No key limits and no causal prefix: what every kernel but the flash one requires.
bool plain_mask(const AttentionCudaArgs& a) {
  return !a.key_limits && !(a.causal_prefix && a.mask == MaskMode::kCausal);
}

constexpr AttentionKernel kOrder[] = {AttentionKernel::kFirstRow, AttentionKernel::kLastRow, AttentionKernel::kTma,
                                      AttentionKernel::kWgmma,    AttentionKernel::kMmaSync, AttentionKernel::kFlash};

const char* queries_name(AttentionQueries q) {
  switch (q) {
    case AttentionQueries::kAll: return "every row";
    case AttentionQueries::kFirst: return "first rows";
    case AttentionQueries::kLast: return "last rows";
  }
  return "?";
}

}  // namespace

const char* attention_kernel_name(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::kFirstRow: return "first row";
    case AttentionKernel::kLastRow: return "last row";
    case AttentionKernel::kTma: return "tma";
    case AttentionKernel::kWgmma: return "wgmma";
    case AttentionKernel::kMmaSync: return "mma.sync";
    case AttentionKernel::kFlash: return "flash";
  }
  return "?";
}

bool attention_kernel_supports(AttentionKernel k, const AttentionCudaArgs& a) {
  switch (k) {
    // Key limits (masked query expansion: a few short queries) and causal prefixes (DeepSeek-OCR-2's
    // encoder) go to the flash kernel alone.
    case AttentionKernel::kFirstRow:
      return a.queries == AttentionQueries::kFirst && plain_mask(a) && shape_ok(a, kAttentionMaxHeadDim);
    case AttentionKernel::kLastRow:
      return a.queries == AttentionQueries::kLast && plain_mask(a) && shape_ok(a, kAttentionMaxHeadDim);
    case AttentionKernel::kTma:
      return plain_mask(a) && tensor_core_ok(a) && wgmma_allowed() && tma_allowed() &&
             attention_tma_applies(half_args(a));
    case AttentionKernel::kWgmma:
      return plain_mask(a) && tensor_core_ok(a) && wgmma_allowed() && attention_wgmma_applies(half_args(a));
    case AttentionKernel::kMmaSync: return plain_mask(a) && tensor_core_ok(a);
    case AttentionKernel::kFlash:
      return a.queries == AttentionQueries::kAll && shape_ok(a, kAttentionMaxHeadDim) && a.max_seq_len < (1u << 30);
  }
  return false;
}

AttentionKernel choose_attention_kernel(const AttentionCudaArgs& a) {
  for (AttentionKernel k : kOrder)
    if (attention_kernel_supports(k, a)) return k;
  throw make_error("attention (CUDA): no kernel supports ", queries_name(a.queries), " of ", a.heads, " heads on ",
                   a.kv_heads, " kv heads of head_dim ", a.head_dim, " in ", dtype_name(a.type), " (head_dim up to ",
                   kAttentionMaxHeadDim, ", heads a multiple of kv_heads, row strides of heads × head_dim at least, ",
                   "at most 65535 heads)");
}

void attention_launch_cuda(AttentionKernel k, const AttentionCudaArgs& a, cudaStream_t stream) {
  check(attention_kernel_supports(k, a), "attention (CUDA): the ", attention_kernel_name(k), " kernel does not ",
        "support ", queries_name(a.queries), " of head_dim ", a.head_dim, " in ", dtype_name(a.type));
  switch (k) {
    case AttentionKernel::kFirstRow: return attention_first_cuda(a, stream);
    case AttentionKernel::kLastRow: return attention_last_cuda(a, stream);
    case AttentionKernel::kTma:
    case AttentionKernel::kWgmma:
    case AttentionKernel::kMmaSync:
      if (a.num_seqs == 0 || a.max_seq_len == 0) return;  // no query rows
      if (k == AttentionKernel::kTma) return attention_tma_cuda(half_args(a), a.max_seq_len, stream);
      if (k == AttentionKernel::kWgmma) return attention_wgmma_cuda(half_args(a), a.max_seq_len, stream);
      {
        HalfAttentionTuning tuning;
        tuning.kernel = HalfAttentionKernel::kMmaSync;
        return attention_half_cuda_tuned(half_args(a), a.max_seq_len, stream, tuning);
      }
    case AttentionKernel::kFlash: return attention_cuda(a, stream);
  }
}

void attention_dispatch_cuda(const AttentionCudaArgs& a, cudaStream_t stream) {
  attention_launch_cuda(choose_attention_kernel(a), a, stream);
}

AttentionCudaArgs attention_args_from_half(const HalfAttentionArgs& a, std::size_t max_seq_len) {
  AttentionCudaArgs d;
  d.q = a.q;
  d.ldq = a.ldq;
  d.k = a.k;
  d.ldk = a.ldk;
  d.v = a.v;
  d.ldv = a.ldv;
  d.out = a.out;
  d.ldo = a.ldo;
  d.seq_starts = a.seq_starts;
  d.num_seqs = a.num_seqs;
  d.heads = a.heads;
  d.kv_heads = a.kv_heads;
  d.head_dim = a.head_dim;
  d.scale = a.scale;
  d.mask = a.mask;
  d.window = a.window;
  d.type = a.type == HalfType::kF16 ? DType::kF16 : DType::kBF16;
  d.max_seq_len = max_seq_len;
  d.rows = a.rows;
  return d;
}

}  // namespace il::ops
