// Rows gathered side by side (plan::GatherRowsStep): the im2col of a convolution over token rows.
// Part t of out row r is src row index[r · taps + t], or zeros where that index is −1.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "ops/tensor_view.h"

namespace il::ops {

struct GatherRowsArgs {
  ConstTensorView src;           // [src_rows, cols]
  TensorView out;                // [rows, taps · cols]
  const int32_t* index = nullptr;  // [rows · taps]
  std::size_t rows = 0, taps = 0, cols = 0;
};

void check_gather_rows(const GatherRowsArgs& a, const char* what = "gather_rows");
// f32 operands.
void gather_rows_cpu(const GatherRowsArgs& a, ThreadPool& pool);

// The same im2col with the rows taken from each sequence's neighbourhood (plan::SequenceWindowStep,
// a 1-D convolution with zero padding over each sequence): part j of out row t is x row
// t + j − (taps − 1) / 2 when it lies in [seq_starts[s], seq_starts[s + 1]) of t's sequence s,
// else zeros. Rows from seq_starts[num_seqs] to `rows` (a launch's padding) are zeros.
struct SequenceWindowArgs {
  ConstTensorView x;                    // [rows, cols]
  TensorView out;                       // [rows, taps · cols]
  const int32_t* seq_starts = nullptr;  // [num_seqs + 1], ascending
  std::size_t num_seqs = 0, rows = 0, taps = 0, cols = 0;
};

void check_sequence_window(const SequenceWindowArgs& a, const char* what = "sequence_window");
// f32 operands.
void sequence_window_cpu(const SequenceWindowArgs& a, ThreadPool& pool);

}  // namespace il::ops
