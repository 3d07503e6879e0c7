// The gated short causal convolution of LFM2's conv layers, after their input projection:
// each token's row of `bcx` holds three n-wide blocks B | C | x (the in-projection's output
// rows in that order), and
//
//   out[i, c] = C[i, c] · Σ_{k < taps} w[c, k] · B[j, c] · x[j, c],   j = i − (taps − 1) + k,
//
// a depthwise causal convolution (one filter of `taps` values per channel) of B ⊙ x along the
// sequence, gated by C. Terms with j before the start of token i's sequence are zero: each
// sequence of a ragged batch starts from an empty history, as transformers' Conv1d with
// taps − 1 zeros of left padding does for a sequence alone. The weight is the checkpoint's
// conv.weight [n, 1, taps] read as [n, taps] (tap k of channel c at c · taps + k), f32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "ops/tensor_view.h"

namespace il::ops {

struct ShortConvArgs {
  ConstTensorView bcx;                 // [rows, ≥ 3n]: B | C | x
  const float* w = nullptr;            // [n, taps], f32 in every mode
  TensorView out;                      // [rows, n], bcx's element type; must not overlap bcx
  const int32_t* seq_starts = nullptr; // num_seqs + 1 offsets
  std::size_t num_seqs = 0;
  std::size_t rows = 0;                // rows at or past seq_starts[num_seqs] (padding) get zeros
  std::size_t n = 0, taps = 0;
  // Optional, one per sequence (plan::Batch::key_limits; on the device for the CUDA op): a
  // sequence's rows from key_limits[s] on are masked tokens and get zeros — transformers zeroes a
  // masked row before the in-projection, so its C block, and with it its output, is zero.
  const int32_t* key_limits = nullptr;
};

// The checks both backends make: operands present and of one element type, strides that fit.
void check_short_conv(const ShortConvArgs& a, const char* what = "short_conv");
// f32 operands only.
void short_conv_cpu(const ShortConvArgs& a, ThreadPool& pool);

// The most taps the CUDA kernel takes (LFM2 checkpoints use 3).
inline constexpr std::size_t kShortConvMaxTaps = 16;

}  // namespace il::ops
