// Pooling (mean / CLS / last) and row L2 normalisation on the GPU. Sums run in double, as the
// CPU ops do, so long sequences keep f32 parity. Pooled rows are written as f32, or for the
// first-token rows a CLS-pooled model's last layer runs on, in the activations' type.
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/launch_cuda.cuh"
#include "ops/ops_cuda.h"
#include "ops/reduce_cuda.cuh"

namespace il::ops {
namespace {

constexpr int kPoolThreads = 128;
constexpr int kL2Threads = 256;

// Block (sequence, column chunk); a thread owns one column, so reads of a row coalesce.
template <typename T, typename TOut>
__global__ void pool_kernel(const T* x, std::size_t ldx, PoolArgs p) {
  pdl::wait_for_predecessor();
  const std::size_t s = blockIdx.x;
  const std::size_t j = blockIdx.y * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (j >= p.cols) return;
  const std::size_t end = static_cast<std::size_t>(p.seq_starts[s + 1]);
  // Pool starts come from the host, clamped to the sequence there (runtime/batching.cc).
  const std::size_t begin = static_cast<std::size_t>(
      p.mode == PoolingMode::kCls || !p.pool_starts ? p.seq_starts[s] : p.pool_starts[s]);
  TOut* out = static_cast<TOut*>(p.out.data) + s * p.out.ld;
  if (end <= begin) {  // an empty range pools to zeros rather than reading its neighbour
    elem::store(out + j, 0.0f);
    return;
  }
  if (p.one_row_per_sequence) {  // CLS of rows already gathered per sequence
    elem::store(out + j, elem::load(x + s * ldx + j));
    return;
  }
  switch (p.mode) {
    case PoolingMode::kCls: elem::store(out + j, elem::load(x + begin * ldx + j)); return;
    case PoolingMode::kLastToken: elem::store(out + j, elem::load(x + (end - 1) * ldx + j)); return;
    case PoolingMode::kMean: {
      double acc = 0.0;
      for (std::size_t r = begin; r < end; ++r) acc += elem::load(x + r * ldx + j);
      elem::store(out + j, static_cast<float>(acc * (1.0 / static_cast<double>(end - begin))));
      return;
    }
  }
}

template <typename T>
__global__ void l2_rows_kernel(T* x, std::size_t ldx, std::size_t cols) {
  pdl::wait_for_predecessor();
  __shared__ double scratch[kL2Threads / 32];
  T* row = x + static_cast<std::size_t>(blockIdx.x) * ldx;
  double sq = 0.0;
  for (std::size_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const double v = elem::load(row + j);
    sq += v * v;
  }
  sq = cuda_reduce::block_sum(sq, scratch);
  if (sq <= 0.0) return;  // an all-zero row stays zero (torch's F.normalize)
  const float inv = static_cast<float>(1.0 / sqrt(sq));
  for (std::size_t j = threadIdx.x; j < cols; j += blockDim.x) elem::store(row + j, elem::load(row + j) * inv);
}

}  // namespace

void pool_cuda(const PoolArgs& a, cudaStream_t stream) {
  check(a.x.data && a.out.data && a.seq_starts, "pool: null operand");
  check(a.x.ld >= a.cols && a.out.ld >= a.cols, "pool: row stride smaller than the row");
  check(!a.one_row_per_sequence || a.mode != PoolingMode::kMean,
        "pool: one row per sequence (the selected rows) pools by CLS or last token only");
  if (a.num_seqs == 0 || a.cols == 0) return;
  check(a.num_seqs < (1u << 31), "pool: too many sequences for one launch");
  const dim3 grid(static_cast<unsigned>(a.num_seqs),
                  static_cast<unsigned>((a.cols + kPoolThreads - 1) / kPoolThreads));
  // Only the combinations the executor uses: f32 rows from any type, or a type kept as it is.
  const DType in = a.x.dtype, out = a.out.dtype;
  check(out == DType::kF32 || out == in, "pool: output type must be f32 or the input's");
  elem::dispatch(in, [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(a.x.data);
    if (out == DType::kF32)
      pdl::launch(pool_kernel<T, float>, grid, kPoolThreads, 0, stream, x, a.x.ld, a);
    else
      pdl::launch(pool_kernel<T, T>, grid, kPoolThreads, 0, stream, x, a.x.ld, a);
  });
}

void l2_rows_cuda(const L2RowsArgs& a, cudaStream_t stream) {
  check(a.x.data != nullptr || a.rows == 0, "l2_rows: null operand");
  check(a.x.ld >= a.cols, "l2_rows: row stride smaller than the row");
  if (a.rows == 0 || a.cols == 0) return;
  check(a.rows < (1u << 31), "l2_rows: too many rows for one launch");
  elem::dispatch(a.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    pdl::launch(l2_rows_kernel<T>, static_cast<unsigned>(a.rows), kL2Threads, 0, stream, static_cast<T*>(a.x.data),
                a.x.ld, a.cols);
  });
}

}  // namespace il::ops
