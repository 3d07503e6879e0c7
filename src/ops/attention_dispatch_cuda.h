// The CUDA attention of one step, and the one place that picks its kernel. The arguments carry
// their element type (q, k, v and out are `type` arrays behind void pointers: nothing pretends a
// half array is float), the query rows the step computes, and the launch facts only the host
// knows (the longest sequence, the rows the buffers hold). Each kernel states what it supports;
// the dispatch takes the first kernel of a fixed order that does:
//
//   first row / last row   one query row per sequence (attention_first_cuda.cu; f32 arithmetic)
//   tma                    Hopper, f16 / bf16, head_dim 64, aligned, buffer rows known
//                          (attention_tma_cuda.cu; IL_ATTENTION_TMA=0 or IL_ATTENTION_WGMMA=0 off)
//   wgmma                  Hopper, f16 / bf16, head_dim 64, aligned (attention_wgmma_cuda.cu;
//                          IL_ATTENTION_WGMMA=0 off)
//   mma.sync               f16 / bf16, head_dim ≤ 128, positive finite scale (attention_half_cuda.cu)
//   flash                  any type, head_dim ≤ 256: f32 arithmetic on CUDA cores (attention_cuda.cu)
//
// Every kernel takes bidirectional and causal masks, windows and GQA; a case no kernel supports
// is refused with the reasons. Only CUDA code includes this header.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "ops/attention.h"

namespace il::ops {

enum class AttentionQueries { kAll, kFirst, kLast };

struct AttentionCudaArgs {
  const void* q = nullptr;
  std::size_t ldq = 0;
  const void* k = nullptr;
  std::size_t ldk = 0;
  const void* v = nullptr;
  std::size_t ldv = 0;
  void* out = nullptr;
  std::size_t ldo = 0;
  const int32_t* seq_starts = nullptr;  // [num_seqs + 1] on the device
  std::size_t num_seqs = 0, heads = 0, kv_heads = 0, head_dim = 0;
  float scale = 1.0f;
  MaskMode mask = MaskMode::kBidirectional;
  std::size_t window = 0;
  DType type = DType::kF32;  // of q, k, v and out
  AttentionQueries queries = AttentionQueries::kAll;
  std::size_t max_seq_len = 0;  // at least the longest sequence (sizes the grids)
  std::size_t rows = 0;         // rows of q, k, v readable (0: unknown; the TMA kernel needs it)
  // Optional, [num_seqs] on the device: only sequence s's first key_limits[s] keys are read by
  // any of its rows (plan::Batch::key_limits: masked query expansion). The flash kernel only.
  const int32_t* key_limits = nullptr;
  // Optional, [num_seqs] on the device, with kCausal: every row of sequence s also sees its first
  // causal_prefix[s] keys (ops::AttentionArgs::causal_prefix, plan::Batch::causal_prefix). The
  // flash kernel only.
  const int32_t* causal_prefix = nullptr;
};

enum class AttentionKernel { kFirstRow, kLastRow, kTma, kWgmma, kMmaSync, kFlash };
const char* attention_kernel_name(AttentionKernel k);

// What each kernel supports (its launcher would accept the arguments and compute them exactly).
bool attention_kernel_supports(AttentionKernel k, const AttentionCudaArgs& a);
// The first kernel in the order above that supports `a`; throws il::Error naming the case when none does.
AttentionKernel choose_attention_kernel(const AttentionCudaArgs& a);
// Enqueues `a` on the chosen kernel: no allocation, no synchronisation (capturable).
void attention_dispatch_cuda(const AttentionCudaArgs& a, cudaStream_t stream);
// The same on a given kernel (tests, benchmarks); throws where it does not support `a`.
void attention_launch_cuda(AttentionKernel k, const AttentionCudaArgs& a, cudaStream_t stream);

// The tensor-core kernels' own argument struct (ops/attention_half_cuda.h) as dispatch arguments:
// attention_half_cuda's automatic choice asks choose_attention_kernel too.
struct HalfAttentionArgs;
AttentionCudaArgs attention_args_from_half(const HalfAttentionArgs& a, std::size_t max_seq_len);

}  // namespace il::ops
