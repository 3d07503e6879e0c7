// Late-interaction scores (ops/maxsim.h) on the GPU: one block per (query, document) pair, each
// warp taking query rows warp, warp + kWarps, …; for each kept document row a warp computes the dot
// product (lanes over columns, then a butterfly reduction that leaves every lane the same value,
// in the same order each run) and keeps the max. Each warp sums its rows' maxima in ascending
// order, then thread 0 sums the warps' partials in warp order: deterministic, though not the CPU
// op's summation order. Rows load into f32 from f32 / f16 / bf16; scores are f32.
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/launch_cuda.cuh"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

constexpr int kWarps = 8;

template <typename T>
struct MaxSimParams {
  const T* x;
  std::size_t ld;
  const int32_t* seq_starts;
  const int32_t* pairs;
  const uint8_t* keep;
  float* scores;
  int dim;
};

template <typename T>
__global__ void maxsim_kernel(MaxSimParams<T> p) {
  pdl::wait_for_predecessor();
  __shared__ float partial[kWarps];
  const int pair = static_cast<int>(blockIdx.x);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int q = p.pairs[2 * pair], d = p.pairs[2 * pair + 1];
  const int q0 = p.seq_starts[q], q1 = p.seq_starts[q + 1];
  const int d0 = p.seq_starts[d], d1 = p.seq_starts[d + 1];
  float sum = 0.0f;
  for (int i = q0 + warp; i < q1; i += kWarps) {
    const T* xi = p.x + static_cast<std::size_t>(i) * p.ld;
    float best = -INFINITY;
    for (int j = d0; j < d1; ++j) {
      if (p.keep && !p.keep[j]) continue;
      const T* xj = p.x + static_cast<std::size_t>(j) * p.ld;
      float dot = 0.0f;
      for (int c = lane; c < p.dim; c += 32) dot += elem::load(xi + c) * elem::load(xj + c);
#pragma unroll
      for (int off = 16; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off);
      best = fmaxf(best, dot);
    }
    if (best != -INFINITY) sum += best;  // no kept document row: nothing
  }
  if (lane == 0) partial[warp] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < kWarps; ++w) total += partial[w];
    p.scores[pair] = total;
  }
}

}  // namespace

void maxsim_cuda(const MaxSimArgs& a, cudaStream_t stream) {
  check_maxsim(a, "maxsim (CUDA)");
  if (a.num_pairs == 0) return;
  check(a.num_pairs < (1u << 31) && a.dim < (1u << 30), "maxsim: too many pairs or columns for one launch");
  elem::dispatch(a.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const MaxSimParams<T> p{static_cast<const T*>(a.x.data), a.x.ld, a.seq_starts, a.pairs, a.keep, a.scores,
                            static_cast<int>(a.dim)};
    pdl::launch(maxsim_kernel<T>, static_cast<unsigned>(a.num_pairs), 32 * kWarps, 0, stream, p);
  });
}

}  // namespace il::ops
