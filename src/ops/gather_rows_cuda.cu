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

// One block per (row, part): the row's sequence by binary search over the starts, then a copy
// or zeros, as gather_rows_kernel.
template <typename T>
__global__ void sequence_window_kernel(const T* __restrict__ x, std::size_t ldx, T* __restrict__ out, std::size_t ldo,
                                       const int32_t* __restrict__ starts, int num_seqs, std::size_t taps,
                                       std::size_t cols) {
  const std::size_t pair = blockIdx.x;  // t · taps + j
  const auto t = static_cast<long long>(pair / taps), j = static_cast<long long>(pair % taps);
  int lo = 0, hi = num_seqs;  // the last s with starts[s] <= t
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (starts[mid] <= t) lo = mid;
    else hi = mid;
  }
  const long long first = starts[lo], end = starts[lo + 1];
  const long long r = t + j - static_cast<long long>(taps / 2);
  T* dst = out + static_cast<std::size_t>(t) * ldo + static_cast<std::size_t>(j) * cols;
  if (t >= starts[num_seqs] || r < first || r >= end) {
    for (std::size_t c = threadIdx.x; c < cols; c += kThreads) elem::store(dst + c, 0.0f);
    return;
  }
  const T* s = x + static_cast<std::size_t>(r) * ldx;
  for (std::size_t c = threadIdx.x; c < cols; c += kThreads) dst[c] = s[c];
}

}  // namespace

void sequence_window_cuda(const SequenceWindowArgs& a, cudaStream_t stream) {
  check_sequence_window(a, "sequence_window (CUDA)");
  check(a.num_seqs > 0 || a.rows == 0, "sequence_window (CUDA): rows without sequences");
  if (a.rows == 0 || a.cols == 0) return;
  const std::size_t blocks = a.rows * a.taps;
  check(blocks < (std::size_t{1} << 31) && a.num_seqs < (std::size_t{1} << 30), "sequence_window (CUDA): ", a.rows,
        " rows of ", a.taps, " parts are too many for one launch");
  elem::dispatch(a.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    sequence_window_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        static_cast<const T*>(a.x.data), a.x.ld, static_cast<T*>(a.out.data), a.out.ld, a.seq_starts,
        static_cast<int>(a.num_seqs), a.taps, a.cols);
    IL_CUDA_CHECK_LAUNCH();
  });
}

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
