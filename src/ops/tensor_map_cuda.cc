#include "ops/tensor_map_cuda.h"

#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include <mutex>

#include "core/error.h"

namespace il::ops {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found) ==
            cudaSuccess &&
        found == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  });
  return fn;
}

}  // namespace

bool tensor_maps_available() { return encode_fn() != nullptr; }

CUtensorMap tensor_map_2d(const void* data, std::size_t rows, std::size_t cols, std::size_t ld, uint32_t box_rows,
                          uint32_t box_cols, bool bf16, const char* who) {
  check(encode_fn() != nullptr, who, ": the driver offers no cuTensorMapEncodeTiled");
  CUtensorMap map{};
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {ld * 2};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = encode_fn()(&map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
                                 const_cast<void*>(data), dims, strides, box, element_strides,
                                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                 CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  check(r == CUDA_SUCCESS, who, ": cuTensorMapEncodeTiled failed (", static_cast<int>(r), ") for a ", rows, " × ",
        cols, " matrix with pitch ", ld);
  return map;
}

}  // namespace il::ops
