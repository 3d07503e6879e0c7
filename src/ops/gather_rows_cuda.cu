// Rows gathered side by side on CUDA (ops/gather_rows.h): part t of out row r is src row
// index[r · taps + t], or zeros where that index is negative. One block per (row, part), its
// threads striding over the part's columns: a plain element copy in the shared element type (no
// conversion, so the bits are the source's).
#include "core/error.h"
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

constexpr int kThreads = 128;

template <typename T>
__global__ void gather_rows_kernel(const T* __restrict__ src, std::size_t lds, T* __restrict__ out, std::size_t ldo,
                                   const int32_t* __restrict__ index, std::size_t taps, std::size_t cols) {
  const std::size_t pair = blockIdx.x;  // r · taps + t
  const std::size_t r = pair / taps, t = pair % taps;
  const int32_t i = index[pair];
  T* dst = out + r * ldo + t * cols;
  if (i < 0) {
    for (std::size_t c = threadIdx.x; c < cols; c += kThreads) elem::store(dst + c, 0.0f);
    return;
  }
  const T* s = src + static_cast<std::size_t>(i) * lds;
  for (std::size_t c = threadIdx.x; c < cols; c += kThreads) dst[c] = s[c];
}

}  // namespace

void gather_rows_cuda(const GatherRowsArgs& a, const int32_t* d_index, cudaStream_t stream) {
  check(a.src.data && a.out.data && (d_index || a.rows == 0), "gather_rows (CUDA): null operand");
  check(a.taps > 0 && a.src.ld >= a.cols && a.out.ld >= a.taps * a.cols,
        "gather_rows (CUDA): row stride smaller than the row");
  check(a.src.dtype == a.out.dtype, "gather_rows (CUDA): source and output differ in element type");
  if (a.rows == 0 || a.cols == 0) return;
  const std::size_t blocks = a.rows * a.taps;
  check(blocks < (std::size_t{1} << 31), "gather_rows (CUDA): ", a.rows, " rows of ", a.taps,
        " parts are too many for one launch");
  elem::dispatch(a.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    gather_rows_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        static_cast<const T*>(a.src.data), a.src.ld, static_cast<T*>(a.out.data), a.out.ld, d_index, a.taps, a.cols);
    IL_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace il::ops
