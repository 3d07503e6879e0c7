// Per-sequence pooling of token rows: mean over the sequence's rows, its first row (CLS), or its
// last row. Ragged batches hold no padding, so every row of a sequence counts, except leading
// prompt rows a model pools without (sentence-transformers' include_prompt: false): with
// pool_starts, mean and last-token pooling read rows [pool_starts[s], seq_starts[s + 1]) and
// CLS still reads the sequence's first row. An empty range pools to zeros. With
// one_row_per_sequence, x holds one row per sequence instead (row s: its first or last token's,
// as a model's last layer computed for selected rows leaves them) and the mode must be CLS or
// last token: row s is copied, or zeros where the pooled range of sequence s is empty.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "inferencelayer/types.h"
#include "ops/tensor_view.h"

namespace il::ops {

struct PoolArgs {
  ConstTensorView x;
  TensorView out;  // [num_seqs, cols]; on CUDA f32 or x's element type
  const int32_t* seq_starts = nullptr;
  std::size_t num_seqs = 0;
  std::size_t cols = 0;
  PoolingMode mode = PoolingMode::kMean;
  const int32_t* pool_starts = nullptr;  // [num_seqs] or null (= seq_starts)
  bool one_row_per_sequence = false;
};

// f32 operands only.
void pool_cpu(const PoolArgs& a, ThreadPool& pool);

// Scales each row to unit L2 norm; an all-zero row stays zero (as torch's F.normalize).
struct L2RowsArgs {
  TensorView x;  // normalised in place
  std::size_t rows = 0, cols = 0;
};

// f32 x only.
void l2_rows_cpu(const L2RowsArgs& a, ThreadPool& pool);

}  // namespace il::ops
