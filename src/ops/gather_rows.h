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

}  // namespace il::ops
