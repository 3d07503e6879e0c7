// The Hopper (sm_90a) form of the tensor-core attention of ops/attention_half_cuda.h, for head
// dim 64 (bge-base, XLM-R, most BERT-size encoders): Q·Kᵀ and P·V on wgmma instead of mma.sync.
// attention_half_cuda takes it where it applies; the semantics are the same (ragged sequences,
// masks, GQA), so the same tests hold it to the same tolerance. Only CUDA code includes this.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "ops/attention_half_cuda.h"

namespace il::ops {

// A compute capability 9.0 device, head_dim 64, q / k / v 16-byte aligned with row strides that
// are multiples of 8 elements, out 4-byte aligned with an even stride.
bool attention_wgmma_applies(const HalfAttentionArgs& a);

// Enqueues only (no allocation, no synchronisation): capturable in a CUDA graph. Throws il::Error
// where attention_wgmma_applies is false.
void attention_wgmma_cuda(const HalfAttentionArgs& a, std::size_t max_seq_len, cudaStream_t stream);

// The warp-specialised form (ops/attention_tma_cuda.cu): persistent blocks, Q / K / V fed by TMA,
// 128-key tiles. Applies where attention_wgmma_applies does and a.rows is known.
bool attention_tma_applies(const HalfAttentionArgs& a);
void attention_tma_cuda(const HalfAttentionArgs& a, std::size_t max_seq_len, cudaStream_t stream);

}  // namespace il::ops
