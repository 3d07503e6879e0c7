// A ViT's patch embedding around its GEMM (plan::PatchEmbedStep): the batch's patch rows into the
// serving precision, and each token's position row added after the projection.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "ops/tensor_view.h"

namespace il::ops {

// out[r, :cols] = rows[r] (f32, dense rows of `cols`) for r < num_rows; zeros for num_rows ≤ r <
// launched_rows (padding rows of a bucketed launch, so the GEMM after reads finite values).
struct PatchRowsArgs {
  const float* rows = nullptr;
  std::size_t num_rows = 0, launched_rows = 0, cols = 0;
  TensorView out;
};

// out[t, :cols] += table[positions[t], :cols] for t < num_rows (table: dense rows in out's type).
struct AddPositionArgs {
  const int32_t* positions = nullptr;
  std::size_t num_rows = 0, cols = 0;
  ConstTensorView table;
  TensorView out;
};

void patch_rows_cpu(const PatchRowsArgs& a);
void add_position_cpu(const AddPositionArgs& a, ThreadPool& pool);

}  // namespace il::ops
