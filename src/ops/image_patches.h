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

// The same rows cut from images in bytes (plan::Batch::image_bytes): row r (r < num_rows) is
// token r % n of image r / n (n = (image_rows / patch) · (image_cols / patch) patches an image,
// grid cell (k / grid cols, k % grid cols)), column (c, ky, kx) of its patch row is
// byte_values[c · 256 + the byte of channel c at pixel (ky, kx) of that cell]; zeros for
// num_rows ≤ r < launched_rows. Each value is a table entry, so the rows are bit for bit those
// patch_rows gets from the expanded f32 image (the stores round them to out's type).
struct PatchBytesArgs {
  const std::uint8_t* bytes = nullptr;  // images of image_rows × image_cols × channels, back to back
  const float* byte_values = nullptr;   // channels × 256
  std::size_t channels = 0, patch = 0, image_rows = 0, image_cols = 0;
  std::size_t num_rows = 0, launched_rows = 0;
  TensorView out;  // launched_rows rows of channels · patch² columns
  // CUDA only: where set, the real row count is read on the device from here instead of
  // num_rows, so a captured graph serves every batch of its bucketed shape.
  const int32_t* device_num_rows = nullptr;
};

void patch_rows_cpu(const PatchRowsArgs& a);
void patch_bytes_cpu(const PatchBytesArgs& a, ThreadPool& pool);
void add_position_cpu(const AddPositionArgs& a, ThreadPool& pool);

}  // namespace il::ops
