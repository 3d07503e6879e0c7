// The patch embedding's small kernels (ops/image_patches.h) on the GPU: f32 patch rows, or patch
// rows cut from uint8 images through a byte value table, into the serving precision (zeros on
// padding rows), and position rows added in place. One thread per element; all are
// memory-bound and tiny next to the GEMM between them.
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

// One thread per patch-row element: a byte of the image and its table entry, stored in T. Reads
// stride the image by the channel count, all within the block's P × P × C window.
template <typename T>
__global__ void patch_bytes_kernel(const std::uint8_t* bytes, const float* values, unsigned num_rows,
                                   const int32_t* device_num_rows, unsigned channels, unsigned patch,
                                   unsigned image_cols, unsigned grid_cols, unsigned n, std::size_t image_bytes,
                                   T* out, std::size_t ldo) {
  pdl::wait_for_predecessor();
  const unsigned cols = channels * patch * patch;
  const unsigned e = blockIdx.y * blockDim.x + threadIdx.x;
  if (e >= cols) return;
  const unsigned r = blockIdx.x;
  const unsigned real = device_num_rows ? static_cast<unsigned>(*device_num_rows) : num_rows;
  float v = 0.0f;
  if (r < real) {
    const unsigned k = r % n, gy = k / grid_cols, gx = k % grid_cols;
    const unsigned c = e / (patch * patch), ky = (e / patch) % patch, kx = e % patch;
    const std::uint8_t b = bytes[static_cast<std::size_t>(r / n) * image_bytes +
                                 (static_cast<std::size_t>(gy * patch + ky) * image_cols + gx * patch + kx) * channels +
                                 c];
    v = values[c * 256u + b];
  }
  elem::store(out + static_cast<std::size_t>(r) * ldo + e, v);
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

void patch_bytes_cuda(const PatchBytesArgs& a, cudaStream_t stream) {
  const std::size_t C = a.channels, P = a.patch, cols = C * P * P;
  check(a.out.data && ((a.num_rows == 0 && !a.device_num_rows) || (a.bytes && a.byte_values)) && P > 0 &&
            a.image_rows % P == 0 && a.image_cols % P == 0 && a.image_rows > 0 && a.image_cols > 0 &&
            a.out.ld >= cols && a.num_rows <= a.launched_rows,
        "patch_bytes (CUDA): null operand, short stride, more rows than launched or an image that is not whole "
        "patches");
  if (a.launched_rows == 0 || cols == 0) return;
  check(a.launched_rows < (1u << 31) && (cols + kThreads - 1) / kThreads <= 65535 && a.image_cols < (1u << 20) &&
            a.image_rows < (1u << 20),
        "patch_bytes: too large");
  const unsigned grid_cols = static_cast<unsigned>(a.image_cols / P);
  const unsigned n = static_cast<unsigned>((a.image_rows / P) * grid_cols);
  const std::size_t image_bytes = a.image_rows * a.image_cols * C;
  elem::dispatch(a.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    const dim3 grid(static_cast<unsigned>(a.launched_rows), static_cast<unsigned>((cols + kThreads - 1) / kThreads));
    pdl::launch(patch_bytes_kernel<T>, grid, kThreads, 0, stream, a.bytes, a.byte_values,
                static_cast<unsigned>(a.num_rows), a.device_num_rows, static_cast<unsigned>(C),
                static_cast<unsigned>(P), static_cast<unsigned>(a.image_cols), grid_cols, n, image_bytes,
                static_cast<T*>(a.out.data), a.out.ld);
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
