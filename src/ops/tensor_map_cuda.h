// TMA tensor maps (CUtensorMap) for the Hopper kernels: the GEMM of ops/gemm_wgmma_cuda.cu and
// the attention of ops/attention_tma_cuda.cu both describe row-major f16 / bf16 matrices moved in
// boxes whose rows are 128 bytes, 128-byte swizzled (the layout wgmma reads without bank
// conflicts). The encoder is the driver's, reached through the runtime's entry-point query, so
// the build does not link libcuda. Only CUDA code includes this header.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace il::ops {

// Whether the driver offers cuTensorMapEncodeTiled (CUDA 12.0 or later).
bool tensor_maps_available();

// A [rows, cols] matrix of 2-byte elements (bf16 when `bf16`, else f16) with row pitch `ld`
// elements, moved in boxes of box_rows × box_cols (box_cols × 2 bytes must be 128: the
// swizzle's row). Rows and columns outside the matrix arrive as zeros. Throws il::Error (naming
// `who`) when the driver refuses the description.
CUtensorMap tensor_map_2d(const void* data, std::size_t rows, std::size_t cols, std::size_t ld, uint32_t box_rows,
                          uint32_t box_cols, bool bf16, const char* who);

}  // namespace il::ops
