// Attention pooling with a learned query (SigLIP's MAP head, torch.nn.MultiheadAttention called
// with one probe row as the query): for each sequence s and head h,
//
//   out[s, h] = Σ_j softmax_j(scale · q_h · k[j, h]) · v[j, h]    over the rows j of sequence s,
//
// where q is one fixed row shared by every sequence (the probe already through the query
// projection, f32 in every mode). out has one row per sequence; k, v are token rows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "ops/tensor_view.h"

namespace il::ops {

struct ProbeAttentionArgs {
  const float* q = nullptr;            // [heads · head_dim], f32
  ConstTensorView k, v;                // token rows, heads · head_dim columns used
  TensorView out;                      // [num_seqs, heads · head_dim], k's element type
  const int32_t* seq_starts = nullptr; // num_seqs + 1 offsets
  std::size_t num_seqs = 0;
  std::size_t heads = 0, head_dim = 0;
  float scale = 1.0f;
};

// The checks both backends make: operands present and of one element type, strides that fit.
void check_probe_attention(const ProbeAttentionArgs& a, const char* what = "probe_attention");
// f32 operands only. An empty sequence gets a zero row.
void probe_attention_cpu(const ProbeAttentionArgs& a, ThreadPool& pool);

// The widest head the CUDA kernel takes.
inline constexpr std::size_t kProbeAttentionMaxHeadDim = 256;

}  // namespace il::ops
