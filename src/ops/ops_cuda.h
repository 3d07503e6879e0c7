// CUDA launchers for the plan's ops. They take the CPU ops' argument structs, with every pointer
// (seq_starts and token ids included) in device memory, and enqueue asynchronously on `stream`:
// nothing here allocates or synchronises. Semantics are those of the <op>.h headers exactly; the
// gpu op parity tests hold each launcher to its CPU op. Only CUDA code includes this header.
//
// Element types: `type` says what the activation pointers of the struct point to (f32, f16 or
// bf16; the struct's float* then carry the address of the half array). Kernels load into f32,
// compute in f32 (norm statistics, softmax, pooling and L2 sums included) and round once on the
// store. Which pointers follow `type` and which stay f32 is said per launcher below.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/dtype.h"
#include "inferencelayer/types.h"
#include "ops/attention.h"
#include "ops/embed.h"
#include "ops/glu.h"
#include "ops/layernorm.h"
#include "ops/pool.h"
#include "ops/rope.h"

namespace il::ops {

// dst[i] = src[i] converted (round to nearest even), n elements; src and dst must not overlap
// unless the types are equal sizes and dst == src.
void convert_cuda(const void* src, DType from, void* dst, DType to, std::size_t n, cudaStream_t stream);

// num_tokens: rows of `out` (the token ids' count); the sequence of each token is found in
// seq_starts on the device. Tokens at or past seq_starts[num_seqs] (padding up to a bucket)
// get zero rows. `type`: the tables and out.
void embed_cuda(const EmbedArgs& a, std::size_t num_tokens, cudaStream_t stream, DType type = DType::kF32);

// cols up to kLayerNormMaxCols: one row is staged in shared memory (f32), which with the
// reduction scratch must stay inside the 48 KiB a block gets without opting in. `type`: x,
// residual, out and sum_out; the weight and bias stay f32 (they scale a normalised f32 value:
// rounding them would add an error for no speed, as they are read once per row from cache).
// sum_out and group as ops/layernorm.h says (sum_out may alias x or residual).
inline constexpr std::size_t kLayerNormMaxCols = 12000;
void layernorm_cuda(const LayerNormArgs& a, cudaStream_t stream, DType type = DType::kF32);

// max_seq_len: at least the longest sequence of the batch (sizes the grid; the host knows it,
// the device offsets stay on the device). head_dim up to kAttentionMaxHeadDim. `type`: q, k, v
// and out (staged as f32 in shared memory).
inline constexpr std::size_t kAttentionMaxHeadDim = 256;
void attention_cuda(const AttentionArgs& a, std::size_t max_seq_len, cudaStream_t stream,
                    DType type = DType::kF32);

// Only each sequence's first query row: attention_first_cpu's semantics (out row s for sequence
// s). head_dim up to kAttentionMaxHeadDim; `type`: q, k, v and out; f32 arithmetic throughout.
void attention_first_cuda(const AttentionArgs& a, cudaStream_t stream, DType type = DType::kF32);
// The same for each sequence's last query row (attention_last_cpu's semantics).
void attention_last_cuda(const AttentionArgs& a, cudaStream_t stream, DType type = DType::kF32);

// out = act(x[:, :n]) ⊙ x[:, n:2n] (ops/glu.h). `type`: x and out.
void glu_cuda(const GluArgs& a, cudaStream_t stream, DType type = DType::kF32);

// Rotary embeddings in place (ops/rope.h), positions int32 on the device (one per row), angles
// exactly rope_cpu's (f32 product, cosine and sine of it rounded to f32). rotary_dim up to
// kRopeMaxRotaryDim. `type`: x.
inline constexpr std::size_t kRopeMaxRotaryDim = 256;
void rope_cuda(const RopeArgs& a, cudaStream_t stream, DType type = DType::kF32);

// `in`: the element type of x; `out`: f32 (pooled rows, read back as f32) or `in` (first-token
// rows that stay activations).
void pool_cuda(const PoolArgs& a, cudaStream_t stream, DType in = DType::kF32, DType out = DType::kF32);
// `type`: x (normalised in place; the sum of squares in double).
void l2_rows_cuda(const L2RowsArgs& a, cudaStream_t stream, DType type = DType::kF32);

// y[r, c] = act(y[r, c] + bias[c]) over rows × cols (row stride ldy); bias may be null. The GEMM
// epilogue for what cuBLASLt does not fuse, with the activations of ops/activation.h. `type`: y
// and bias (a GEMM's bias has its output's type: cuBLASLt's epilogue requires it).
void bias_activation_cuda(void* y, std::size_t ldy, std::size_t rows, std::size_t cols, const void* bias,
                          Activation act, cudaStream_t stream, DType type = DType::kF32);

// Keeps the stream busy for about `microseconds` (one thread sleeping on the global timer), so
// launches enqueued behind it start back to back: the profiler's way to time device work alone.
void hold_stream_cuda(double microseconds, cudaStream_t stream);

// y[m, n] = x[m, k] · W[n, k]ᵀ without epilogue, by a plain tiled kernel (f32 accumulation): the
// GEMM's fallback where cuBLASLt offers no algorithm (see ops/gemm_cuda.h). `type`: x, w and y.
void gemm_fallback_cuda(const void* x, std::size_t ldx, const void* w, std::size_t n, std::size_t k, void* y,
                        std::size_t ldy, std::size_t m, cudaStream_t stream, DType type = DType::kF32);

}  // namespace il::ops
