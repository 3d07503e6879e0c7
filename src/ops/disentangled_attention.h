// DeBERTa's disentangled self-attention over packed sequences (no padding, no n×n matrix): for
// query row i and key row j of one sequence (sequence-local positions), per head h,
//
//   m        = rel_index[i − j + max_len − 1]          (a row of the relative tables)
//   score_ij = scale · ( q_i·k_j  +  q_i·pos_key[m]  +  k_j·pos_query[m] )
//   out_i    = Σ_j softmax_j(score_i) v_j
//
// with the c2p term (q·pos_key) only when pos_key is given and the p2c term (k·pos_query) only
// when pos_query is given. pos_key / pos_query are the layer's key / query projections of the
// (normalised) relative embeddings, folded at load ([2·span, heads·head_dim], f32 in every
// precision mode). One index m serves both terms: transformers reads c2p at
// clamp(bucket(i − j) + span) and p2c at clamp(−bucket(j − i) + span), equal because the bucket
// function is odd. rel_index holds m for every distance as f32 (exact small integers), computed
// once on the host by deberta_rel_index, so every backend reads the same rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "ops/tensor_view.h"

namespace il::ops {

struct DisentangledAttentionArgs {
  ConstTensorView q, k, v;         // token rows, heads · head_dim columns each (strided views)
  TensorView out;
  const int32_t* seq_starts = nullptr;  // [num_seqs + 1]
  std::size_t num_seqs = 0;
  std::size_t heads = 0, head_dim = 0;
  const float* pos_key = nullptr;    // [2·span, heads·head_dim] or null (no c2p term)
  const float* pos_query = nullptr;  // [2·span, heads·head_dim] or null (no p2c term)
  std::size_t span = 0;
  const float* rel_index = nullptr;  // [2·max_len − 1]: m for i − j = −(max_len − 1) .. max_len − 1
  std::size_t max_len = 0;           // no sequence may be longer
  float scale = 1.0f;                // 1 / sqrt(head_dim · (1 + number of position terms))
  int buckets = 0, max_rel = 0;      // the parameters rel_index was made with (deberta_rel_index)

  // The table form on CUDA (the CPU ignores these). With `tables` given, two small products first
  // fill per-head tables c2p[row][m − m_lo] = q_row·pos_key[m] and p2c[row][m − m_lo] =
  // k_row·pos_query[m] over the columns m the batch's distances reach, and a flash kernel starts
  // each score tile from the values it gathers there: tensor cores in f16 / bf16 (the products
  // over pos_key_t / pos_query_t), the f32 flash kernel in f32 (FMA products over pos_key /
  // pos_query). Null `tables`: the per-pair kernel, which computes the terms for each
  // (query, key) pair.
  ConstTensorView pos_key_t, pos_query_t;  // f16 / bf16: the same tables in out's element type
  float* tables = nullptr;                 // workspace, f32
  std::size_t table_floats = 0;            // its capacity (disentangled_table_floats)
  std::size_t table_rows = 0;              // ≥ seq_starts[num_seqs]: the rows q and k may be read at
};

// The columns [m_lo, m_lo + count) of the relative tables that distances of sequences of up to
// longest tokens reach: the table rows for −(L − 1) … L − 1 with L = min(longest, max_len), an
// interval because the bucketed index never decreases with the distance.
struct RelWindow {
  int m_lo = 0, count = 0;
};
RelWindow deberta_rel_window(std::size_t longest, const DisentangledAttentionArgs& a);
// Floats of the tensor-core form's workspace for `rows` token rows, whatever the batch's window.
std::size_t disentangled_table_floats(std::size_t rows, std::size_t heads, std::size_t span, int terms);
// What an executor allocates: the tables of every head, capped at kDisentangledTableCapBytes
// (but never below one head's), so a large batch runs the heads in passes instead of holding
// 48 KiB a token (deberta-v3-base: 1.5 GiB at 32,768 tokens).
inline constexpr std::size_t kDisentangledTableCapBytes = std::size_t{256} << 20;
std::size_t disentangled_table_cap_floats(std::size_t rows, std::size_t heads, std::size_t span, int terms);

// The relative-table row for distance d = i − j (transformers' make_log_bucket_position, then the
// clamp into [0, 2·span)): |d| up to buckets / 2 is kept, farther distances go to
// sign(d) · (ceil(ln(|d| / mid) / ln((max_rel − 1) / mid) · (mid − 1)) + mid), mid = buckets / 2,
// evaluated in f32 as torch evaluates it. buckets ≤ 0: d itself (no log buckets).
int deberta_rel_index(int d, int span, int buckets, int max_rel);
// The table rel_index of DisentangledAttentionArgs, for sequences of up to max_len tokens.
std::vector<float> deberta_rel_index_table(std::size_t max_len, int span, int buckets, int max_rel);

// The checks both backends make that need no look at seq_starts.
void check_disentangled_attention_shape(const DisentangledAttentionArgs& a, const char* what);
// f32 views only.
void disentangled_attention_cpu(const DisentangledAttentionArgs& a, ThreadPool& pool);

}  // namespace il::ops
