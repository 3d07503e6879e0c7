// CUDA launchers for the plan's ops. They take the ops' argument structs (ops/<op>.h), with every
// pointer (seq_starts and token ids included) in device memory, and enqueue asynchronously on
// `stream`: nothing here allocates or synchronises. Semantics are those of the <op>.h headers
// exactly; the gpu op parity tests hold each launcher to its CPU op. Only CUDA code includes
// this header.
//
// Element types: each array operand is a view carrying its own (ops/tensor_view.h: f32, f16 or
// bf16). Kernels load into f32, compute in f32 (norm statistics, softmax, pooling and L2 sums
// included) and round once on the store. Which operands must share a type and which stay f32 is
// said per launcher below. Where an op has several kernels, one function picks among them, each
// kernel stating what it supports (choose_<op>_kernel, <op>_kernel_supports; <op>_launch_cuda runs a
// given one, for tests): the attention's in ops/attention_dispatch_cuda.h, the GEMM's in
// ops/gemm_cuda.h, the others' here.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/dtype.h"
#include "inferencelayer/types.h"
#include "ops/activation.h"
#include "ops/attention_dispatch_cuda.h"
#include "ops/canvas_sample.h"
#include "ops/disentangled_attention.h"
#include "ops/embed.h"
#include "ops/gather_rows.h"
#include "ops/glu.h"
#include "ops/layernorm.h"
#include "ops/pool.h"
#include "ops/rope.h"
#include "ops/maxsim.h"
#include "ops/short_conv.h"
#include "ops/image_patches.h"
#include "ops/kv_cache.h"
#include "ops/logits.h"
#include "ops/moe.h"
#include "ops/probe_attention.h"
#include "ops/tensor_view.h"

namespace il::ops {

// dst[i] = src[i] converted (round to nearest even), n elements each, dense (ld not read); src
// and dst must not overlap unless the types are equal sizes and they are the same array.
struct ConvertArgs {
  ConstTensorView src;
  TensorView dst;
  std::size_t n = 0;
};
void convert_cuda(const ConvertArgs& a, cudaStream_t stream);

// num_tokens: rows of `out` (the token ids' count); the sequence of each token is found in
// seq_starts on the device. Tokens at or past seq_starts[num_seqs] (padding up to a bucket)
// get zero rows. The tables share out's element type.
void embed_cuda(const EmbedArgs& a, std::size_t num_tokens, cudaStream_t stream);

// cols up to kLayerNormMaxCols: one row is staged in shared memory (f32), which with the
// reduction scratch must stay inside the 48 KiB a block gets without opting in. x, residual, out
// and sum_out share one element type; the weight and bias stay f32 (they scale a normalised f32
// value: rounding them would add an error for no speed, as they are read once per row from
// cache). sum_out and group as ops/layernorm.h says (sum_out may alias x or residual).
// Two kernels: kWarp (a warp per row, registers only) where every operand splits into aligned
// 16-byte vectors and a row (or group) holds at most 8 vectors a lane (2048 f16 / bf16, 1024 f32
// columns); kBlock (the row staged in shared memory) for every other case.
inline constexpr std::size_t kLayerNormMaxCols = 12000;
enum class LayerNormKernel { kWarp, kBlock };
const char* layernorm_kernel_name(LayerNormKernel k);
bool layernorm_kernel_supports(LayerNormKernel k, const LayerNormArgs& a);
LayerNormKernel choose_layernorm_kernel(const LayerNormArgs& a);  // the first that supports a
void layernorm_launch_cuda(LayerNormKernel k, const LayerNormArgs& a, cudaStream_t stream);
void layernorm_cuda(const LayerNormArgs& a, cudaStream_t stream);

// The CUDA-core attention kernels, which the dispatch (ops/attention_dispatch_cuda.h) launches:
// q, k, v and out of a.type (staged as f32 in shared memory), head_dim up to
// kAttentionMaxHeadDim. attention_cuda computes every query row (a.queries kAll) with grids
// sized by a.max_seq_len (at least the longest sequence: the host knows it, the device offsets
// stay on the device). attention_first_cuda / attention_last_cuda compute each sequence's first
// or last query row only: attention_first_cpu's / attention_last_cpu's semantics (out row s
// for sequence s), f32 arithmetic throughout.
inline constexpr std::size_t kAttentionMaxHeadDim = 256;
void attention_cuda(const AttentionCudaArgs& a, cudaStream_t stream);
// DeBERTa's relative bias (ops/disentangled_attention.h) for the f32 flash kernel: per head (at
// + h · head_stride) f32 tables c2p[row][col] = q_row·pos_key[m_lo + col] and p2c[row][col] =
// k_row·pos_query[m_lo + col] (`pitch` floats a row; null for an absent term), read at
// col = rel_index[i − j + max_len − 1] − m_lo for query row i and key j.
struct RelativeBiasF32 {
  const float* c2p = nullptr;
  const float* p2c = nullptr;
  std::size_t head_stride = 0;
  int pitch = 0;
  const float* rel_index = nullptr;
  int max_len = 0, m_lo = 0, m_count = 0;
};
// attention_cuda's f32 flash kernel (bidirectional, one kv head per head) with each score tile
// starting at c2p[i][col] + p2c[j][col] and q·k accumulated on top, all scaled together.
void attention_relative_f32_cuda(const AttentionCudaArgs& a, const RelativeBiasF32& r, cudaStream_t stream);
void attention_first_cuda(const AttentionCudaArgs& a, cudaStream_t stream);
void attention_last_cuda(const AttentionCudaArgs& a, cudaStream_t stream);

// out = act(x[:, :n]) ⊙ x[:, n:2n] (ops/glu.h), x and out of one element type. Two kernels:
// kVector (whole 16-byte vectors a thread) where x's halves and out split into aligned vectors,
// kElement everywhere.
enum class GluKernel { kVector, kElement };
const char* glu_kernel_name(GluKernel k);
bool glu_kernel_supports(GluKernel k, const GluArgs& a);
GluKernel choose_glu_kernel(const GluArgs& a);
void glu_launch_cuda(GluKernel k, const GluArgs& a, cudaStream_t stream);
void glu_cuda(const GluArgs& a, cudaStream_t stream);

// Rotary embeddings in place (ops/rope.h), positions int32 on the device (one per row), angles
// exactly rope_cpu's (f32 product, cosine and sine of it rounded to f32). rotary_dim up to
// kRopeMaxRotaryDim.
inline constexpr std::size_t kRopeMaxRotaryDim = 512;  // Gemma-4's global layers
void rope_cuda(const RopeArgs& a, cudaStream_t stream);

// The KV cache ops over `rows` / `tokens` launched rows (device index arrays; a negative index or
// a zero cache length marks a padding row, skipped or zeroed). Cache, rows and source share the
// activations' type.
void kv_write_cuda(const KvWriteArgs& a, cudaStream_t stream);
void inject_rows_cuda(const InjectRowsArgs& a, cudaStream_t stream);
void cached_attention_cuda(const CachedAttentionArgs& a, std::size_t tokens, cudaStream_t stream);
// How many runs cached_attention_cuda cuts each token's entries into for `tokens` launched tokens
// (1 when the workspace of that many floats cannot hold more).
std::size_t cached_attention_splits(std::size_t tokens, std::size_t heads, std::size_t kv_heads,
                                    std::size_t head_dim, std::size_t workspace_floats);

// out: f32 (pooled rows, read back as f32) or x's element type (selected rows that stay
// activations).
void pool_cuda(const PoolArgs& a, cudaStream_t stream);
// x normalised in place; the sum of squares in double.
void l2_rows_cuda(const L2RowsArgs& a, cudaStream_t stream);

// y = act(y + bias) (ops/activation.h) with the activations of ops/activation_cuda.cuh; bias in
// y's element type (a GEMM's bias has its output's type: cuBLASLt's epilogue requires it). The
// GEMM epilogue for what cuBLASLt does not fuse. Three kernels, the first that supports the
// case: kFlat (dense rows without a bias: one run of 16-byte vectors), kVector (rows and bias in
// aligned vectors), kElement (any layout).
enum class BiasActivationKernel { kFlat, kVector, kElement };
const char* bias_activation_kernel_name(BiasActivationKernel k);
bool bias_activation_kernel_supports(BiasActivationKernel k, const BiasActivationArgs& a);
BiasActivationKernel choose_bias_activation_kernel(const BiasActivationArgs& a);
void bias_activation_launch_cuda(BiasActivationKernel k, const BiasActivationArgs& a, cudaStream_t stream);
void bias_activation_cuda(const BiasActivationArgs& a, cudaStream_t stream);

// Keeps the stream busy for about `microseconds` (one thread sleeping on the global timer), so
// launches enqueued behind it start back to back: the profiler's way to time device work alone.
void hold_stream_cuda(double microseconds, cudaStream_t stream);

// DeBERTa's disentangled attention (ops/disentangled_attention.h). q, k, v and out of one element
// type; pos_key, pos_query and rel_index f32. Grids sized by max_seq_len (at least the longest
// sequence); empty (padding) sequences are skipped on the device. With a.tables (at least one
// head's tables, disentangled_table_floats(a.table_rows, 1, …)), the table form runs: in f16 /
// bf16 on tensor cores, given the tables in the element type (pos_key_t / pos_query_t), where
// its layout conditions hold; in f32 on the f32 flash kernel. Otherwise the per-pair kernel,
// which computes the relative terms for each (query, key) pair.
inline constexpr std::size_t kDisentangledMaxHeadDim = 128;
bool disentangled_attention_cuda_supports(const DisentangledAttentionArgs& a);
void disentangled_attention_cuda(const DisentangledAttentionArgs& a, std::size_t max_seq_len, cudaStream_t stream);
// LFM2's gated short causal convolution (ops/short_conv.h): bcx and out of one element type, the
// filter f32, seq_starts on the device; rows past seq_starts[num_seqs] get zeros. Up to
// kShortConvMaxTaps taps.
void short_conv_cuda(const ShortConvArgs& a, cudaStream_t stream);

// Late-interaction (MaxSim) scores (ops/maxsim.h): x of any element type, seq_starts, pairs and
// keep on the device, the scores f32; one block per pair. Pair indices are not checked on the
// device: the caller builds them from its own batch.
void maxsim_cuda(const MaxSimArgs& a, cudaStream_t stream);

// SigLIP's patch embedding around its GEMM (ops/image_patches.h): f32 patch rows (device) into
// out's type with zeros on padding rows; position rows (table in out's type) added in place.
void patch_rows_cuda(const PatchRowsArgs& a, cudaStream_t stream);
// The same rows cut from uint8 images (bytes, byte_values and device_num_rows on the device).
void patch_bytes_cuda(const PatchBytesArgs& a, cudaStream_t stream);
void add_position_cuda(const AddPositionArgs& a, cudaStream_t stream);
// Attention pooling with a learned query (ops/probe_attention.h): k, v, out of one element type,
// q f32, seq_starts on the device; empty (padding) sequences get zero rows. Heads up to
// kProbeAttentionMaxHeadDim wide.
void probe_attention_cuda(const ProbeAttentionArgs& a, cudaStream_t stream);

// Mixture of experts (ops/moe.h), every pointer on the device, `rows` the launched rows (rows
// past the batch's tokens carry ids ≥ 0 written by the router over them: harmless work). The
// router: x any element type, w and expert_scale f32, 8 tokens a block, experts ≤ 1,024. The
// experts: x, gate_up, down, out of one type; pairs sorted by expert on the device (stable), grouped
// GEMMs over the experts with rows (the GLU in gate_up's epilogue), the weighted sum in slot order:
// no host round trip, graph-capturable, the same bits each run; any cols / inner / out_cols;
// experts ≤ 4,096; bad ids add nothing; a.workspace ≥ moe_workspace_bytes(rows, ...), 256-aligned.
void router_cuda(const RouterArgs& a, cudaStream_t stream);
void moe_cuda(const MoeArgs& a, cudaStream_t stream);

// Row softmax (x f32, out any type; all −inf rows give zeros) and the logit softcap (x any type,
// out f32), ops/logits.h.
void softmax_rows_cuda(const SoftmaxRowsArgs& a, cudaStream_t stream);
void softcap_cuda(const SoftcapArgs& a, cudaStream_t stream);
// Greedy decoding's pick per row (ops/logits.h): x of any element type, out int32 on the device.
void row_argmax_cuda(const RowArgmaxArgs& a, cudaStream_t stream);
// DiffusionGemma's sampler rows (ops/canvas_sample.h): temperature, uniform and out in device
// memory. And rows [0, rows) of an f32 matrix set to one value (a canvas without
// self-conditioning: −inf rows).
void canvas_sample_cuda(const CanvasSampleArgs& a, cudaStream_t stream);
void fill_rows_cuda(float* data, std::size_t ld, std::size_t rows, std::size_t cols, float value, cudaStream_t stream);

// Rows gathered side by side (ops/gather_rows.h): src and out of one element type (any), the
// index on the device ([a.rows · a.taps]; −1: a zero part). One block per (row, tap) pair; the
// indices are not checked on the device: the caller checks them against src's rows on the host
// (the CUDA executor in set_batch).
void gather_rows_cuda(const GatherRowsArgs& a, const int32_t* d_index, cudaStream_t stream);
// Each sequence's window of rows (ops/gather_rows.h): x and out of one element type (any), the
// starts on the device. One block per (row, part).
void sequence_window_cuda(const SequenceWindowArgs& a, cudaStream_t stream);

// SAM's windowed / global attention with decomposed relative position (ops/sam_attention.h).
// qkv and out of one element type (any), the bias and the tables f32, f32 arithmetic. The
// per-view tables are chosen on the device by side: each view's side g comes from view_starts (on
// the device), S = window or g, and the view reads the tables entry whose side is S (passed by
// value, so a launch holds no host pointer and no upload: graph-capturable). A view that is not a
// square or has no table of its side is skipped on the device (its rows left as they were); the
// caller checks both on the host. One warp per (view, head, query row), grids sized by
// max_view_tokens (at least the largest view). head_dim ≤ kSamMaxHeadDim, S ≤ kSamMaxSide.
inline constexpr std::size_t kSamMaxHeadDim = 128;
inline constexpr std::size_t kSamMaxSide = 128;
inline constexpr std::size_t kSamMaxTables = 16;
struct SamTableCuda {
  std::size_t side = 0;
  const float* h = nullptr;  // [2 · side − 1, head_dim]
  const float* w = nullptr;
};
struct SamAttentionCudaArgs {
  ConstTensorView qkv;               // [rows, ld]: q | k | v, each heads · head_dim
  const float* qkv_bias = nullptr;   // [3 · heads · head_dim]
  TensorView out;                    // [rows, ld]: heads · head_dim
  const int32_t* view_starts = nullptr;  // [views + 1] on the device
  std::size_t views = 0;
  std::size_t max_view_tokens = 0;   // at least the largest view's tokens (sizes the grid)
  std::size_t heads = 0, head_dim = 0;
  std::size_t window = 0;            // 0: global
  SamTableCuda tables[kSamMaxTables];
  std::size_t num_tables = 0;
  float scale = 1.0f;
};
void sam_attention_cuda(const SamAttentionCudaArgs& a, cudaStream_t stream);

}  // namespace il::ops
