// Ragged flash attention on tensor cores for activations stored in f16 or bf16. Semantics are
// those of ops/attention.h exactly (packed sequences via seq_starts, bidirectional / causal masks,
// local window |i − j| ≤ window / 2, GQA, scale applied to q·k); q, k, v and out hold elements of
// `type`, strides are in elements. Q·Kᵀ and P·V run as f16/bf16 mma with f32 accumulation and the
// online softmax is f32; the probabilities are rounded to `type` once, as the P·V operand, and the
// tensor cores also sum exactly those rounded values for the normalisation.
//
// Every pointer (seq_starts included) is device memory. The launcher only enqueues on `stream`:
// no allocation, no synchronisation, so it can be captured in a CUDA graph. The fast path wants
// q, k, v 16-byte aligned, ldq / ldk / ldv multiples of 8 and head_dim a multiple of 8 (true for a
// fused QKV buffer of any real model); other layouts are accepted and take a slower load path.
// Only CUDA code includes this header.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "ops/attention.h"

namespace il::ops {

enum class HalfType { kF16, kBF16 };

struct HalfAttentionArgs {
  const void* q = nullptr;
  std::size_t ldq = 0;
  const void* k = nullptr;
  std::size_t ldk = 0;
  const void* v = nullptr;
  std::size_t ldv = 0;
  void* out = nullptr;
  std::size_t ldo = 0;
  const int32_t* seq_starts = nullptr;  // [num_seqs + 1] on the device, seq_starts[0] == 0
  std::size_t num_seqs = 0, heads = 0, kv_heads = 0, head_dim = 0;
  float scale = 1.0f;  // must be positive and finite (every model's is: 1/√d or a set factor)
  MaskMode mask = MaskMode::kBidirectional;
  std::size_t window = 0;  // 0 = unlimited; else keys with |i − j| ≤ window / 2
  HalfType type = HalfType::kF16;
  // Rows q, k and v may be read through (at least seq_starts[num_seqs]; the executor passes its
  // buffers' row count). 0 = unknown: the TMA kernel, which reads whole 64-row boxes, is not used.
  std::size_t rows = 0;
};

// head_dim 1 … kHalfAttentionMaxHeadDim. The kernel is instantiated for 32, 64, 96 and 128; other
// sizes run in the next instantiation up with zero padding (e.g. 72 runs as 96).
inline constexpr std::size_t kHalfAttentionMaxHeadDim = 128;
inline bool attention_half_supported(std::size_t head_dim) {
  return head_dim >= 1 && head_dim <= kHalfAttentionMaxHeadDim;
}

// max_seq_len: the longest sequence of the batch (sizes the grid; a larger value is only slower).
// Throws il::Error on unsupported arguments (see attention_half_supported) or a launch failure.
void attention_half_cuda(const HalfAttentionArgs& a, std::size_t max_seq_len, cudaStream_t stream);

// DeBERTa's relative score terms (ops/disentangled_attention.h) on tensor cores. First one launch
// fills, per head, the f32 tables c2p[row][m − m_lo] = q_row·pos_key[m] and p2c[row][m − m_lo] =
// k_row·pos_query[m] for the token rows below seq_starts[num_seqs] and the window's columns (mma
// over the element-type operands, f32 accumulators stored as they are). Then the mma.sync flash
// kernel starts every score tile at c2p[i][m] + p2c[j][m], m = rel_index[i − j + max_len − 1] −
// m_lo, and accumulates q·k on top, so the scale multiplies the three terms together as the CPU
// op does. Bidirectional, no window, no GQA. Memory stays O(tile) per block plus the tables
// (never an n×n matrix).
struct RelativeScores {
  const void* pos_key = nullptr;    // [2·span, ld_pos] in the attention's type, or null (no c2p)
  const void* pos_query = nullptr;  // the same for p2c
  std::size_t ld_pos = 0;
  const float* rel_index = nullptr;  // [2·max_len − 1] f32 (exact integers), on the device
  int max_len = 0;
  int m_lo = 0, m_count = 0;  // the window of table columns the batch reads
  float* tables = nullptr;    // workspace [terms][heads][table_rows][pitch], pitch = m_count rounded up to 8
  std::size_t table_floats = 0, table_rows = 0;
};
// Whether the tensor-core form takes these arguments (else the caller runs the CUDA-core kernel):
// 16-byte aligned q / k / v / tables with strides and head_dim multiples of 8, as the cp.async
// path wants.
bool attention_half_relative_supports(const HalfAttentionArgs& a, const RelativeScores& r);
void attention_half_relative_cuda(const HalfAttentionArgs& a, const RelativeScores& r, std::size_t max_seq_len,
                                  cudaStream_t stream);

// For benchmarks and tuning only: the same kernels with their choices forced. 0 / false
// keep what attention_half_cuda uses. m_tiles, stages and pair_exp are honoured for head_dim
// ≤ 64 on the fast path (elsewhere the defaults apply); seq_major_grid everywhere.
// Which kernel: on Hopper the TMA-fed one (ops/attention_tma_cuda.cu), else the first wgmma one
// (ops/attention_wgmma_cuda.cu), where they apply, and the mma.sync one elsewhere; or one of them
// forced (kWgmma and kTma throw where they do not apply).
enum class HalfAttentionKernel { kAuto, kMmaSync, kWgmma, kTma };
struct HalfAttentionTuning {
  int m_tiles = 0;              // 16-row mma tiles per warp: 1 or 2
  int stages = 0;               // K/V pipeline depth: 2 or 4 (with m_tiles 2 for pair_exp)
  bool pair_exp = false;        // exponentials on element-type pairs (ex2.approx.f16x2 / bf16x2)
  bool seq_major_grid = false;  // the f32 kernel's block order instead of row tile, head, sequence
  // kAuto with any field above set means the mma.sync kernel (those choices are its own).
  HalfAttentionKernel kernel = HalfAttentionKernel::kAuto;
};
void attention_half_cuda_tuned(const HalfAttentionArgs& a, std::size_t max_seq_len, cudaStream_t stream,
                               const HalfAttentionTuning& tuning);

}  // namespace il::ops
