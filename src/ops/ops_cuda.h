// CUDA launchers for the plan's ops. They take the CPU ops' argument structs, with every pointer
// (seq_starts and token ids included) in device memory, and enqueue asynchronously on `stream`:
// nothing here allocates or synchronises. Semantics are those of the <op>.h headers exactly; the
// gpu op parity tests hold each launcher to its CPU op. Only CUDA code includes this header.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "inferencelayer/types.h"
#include "ops/attention.h"
#include "ops/embed.h"
#include "ops/layernorm.h"
#include "ops/pool.h"

namespace il::ops {

// num_tokens: rows of `out` (the token ids' count); the sequence of each token is found in
// seq_starts on the device.
void embed_cuda(const EmbedArgs& a, std::size_t num_tokens, cudaStream_t stream);

// cols up to kLayerNormMaxCols: one row is staged in shared memory, which with the reduction
// scratch must stay inside the 48 KiB a block gets without opting in.
inline constexpr std::size_t kLayerNormMaxCols = 12000;
void layernorm_cuda(const LayerNormArgs& a, cudaStream_t stream);

// max_seq_len: the longest sequence of the batch (sizes the grid; the host knows it, the device
// offsets stay on the device). head_dim up to kAttentionMaxHeadDim.
inline constexpr std::size_t kAttentionMaxHeadDim = 256;
void attention_cuda(const AttentionArgs& a, std::size_t max_seq_len, cudaStream_t stream);

void pool_cuda(const PoolArgs& a, cudaStream_t stream);
void l2_rows_cuda(const L2RowsArgs& a, cudaStream_t stream);

// y[r, c] = act(y[r, c] + bias[c]) over rows × cols (row stride ldy); bias may be null. The GEMM
// epilogue for what cuBLASLt does not fuse, with the activations of ops/activation.h.
void bias_activation_cuda(float* y, std::size_t ldy, std::size_t rows, std::size_t cols,
                          const float* bias, Activation act, cudaStream_t stream);

// y[m, n] = x[m, k] · W[n, k]ᵀ without epilogue, by a plain tiled kernel: the GEMM's fallback
// where cuBLASLt offers no algorithm (see ops/gemm_cuda.h).
void gemm_fallback_cuda(const float* x, std::size_t ldx, const float* w, std::size_t n, std::size_t k, float* y,
                        std::size_t ldy, std::size_t m, cudaStream_t stream);

}  // namespace il::ops
