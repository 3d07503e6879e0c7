// The patch embedding's two small kernels (ops/image_patches.h) on the GPU: f32 patch rows into
// the serving precision (zeros on padding rows), and position rows added in place. One thread
// per element; both are memory-bound and tiny next to the GEMM between them.
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/launch_cuda.cuh"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

constexpr unsigned kThreads = 128;

template <typename T>
__global__ void patch_rows_kernel(const float* rows, unsigned num_rows, unsigned cols, T* out, std::size_t ldo) {
  pdl::wait_for_predecessor();
  const unsigned c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  const unsigned r = blockIdx.x;
  elem::store(out + static_cast<std::size_t>(r) * ldo + c,
              r < num_rows ? rows[static_cast<std::size_t>(r) * cols + c] : 0.0f);
}

template <typename T>
__global__ void add_position_kernel(const int32_t* positions, unsigned cols, const T* table, T* out,
                                    std::size_t ldo) {
  pdl::wait_for_predecessor();
  const unsigned c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  const unsigned r = blockIdx.x;
  T* o = out + static_cast<std::size_t>(r) * ldo + c;
  const float add = elem::load(table + static_cast<std::size_t>(positions[r]) * cols + c);
  elem::store(o, elem::load(o) + add);
}

}  // namespace

void patch_rows_cuda(const PatchRowsArgs& a, cudaStream_t stream) {
  check(a.out.data && (a.rows || a.num_rows == 0) && a.out.ld >= a.cols && a.num_rows <= a.launched_rows,
        "patch_rows (CUDA): null operand, short stride or more rows than launched");
  if (a.launched_rows == 0 || a.cols == 0) return;
  check(a.launched_rows < (1u << 31) && (a.cols + kThreads - 1) / kThreads <= 65535, "patch_rows: too large");
  elem::dispatch(a.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    const dim3 grid(static_cast<unsigned>(a.launched_rows), static_cast<unsigned>((a.cols + kThreads - 1) / kThreads));
    pdl::launch(patch_rows_kernel<T>, grid, kThreads, 0, stream, a.rows, static_cast<unsigned>(a.num_rows),
                static_cast<unsigned>(a.cols), static_cast<T*>(a.out.data), a.out.ld);
  });
}

void add_position_cuda(const AddPositionArgs& a, cudaStream_t stream) {
  check(a.out.data && a.table.data && a.positions && a.out.ld >= a.cols, "add_position (CUDA): null operand or short "
        "stride");
  check(a.table.dtype == a.out.dtype, "add_position (CUDA): table and output differ in element type");
  if (a.num_rows == 0 || a.cols == 0) return;
  check(a.num_rows < (1u << 31) && (a.cols + kThreads - 1) / kThreads <= 65535, "add_position: too large");
  elem::dispatch(a.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    const dim3 grid(static_cast<unsigned>(a.num_rows), static_cast<unsigned>((a.cols + kThreads - 1) / kThreads));
    pdl::launch(add_position_kernel<T>, grid, kThreads, 0, stream, a.positions, static_cast<unsigned>(a.cols),
                static_cast<const T*>(a.table.data), static_cast<T*>(a.out.data), a.out.ld);
  });
}

}  // namespace il::ops
