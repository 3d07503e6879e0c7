// The gated short causal convolution (ops/short_conv.h) on the GPU: one thread per (row, channel),
// its row's sequence start from a binary search over the device's seq_starts (so the grid needs
// only the launched row count, padding rows included: those get zeros). Values load into f32 and
// the sum runs over the taps in the CPU op's order with explicitly rounded products and sums (no
// fused multiply-add the CPU does not do), so f32 results equal short_conv_cpu's; f16 / bf16
// round once on the store. Memory-bound and a small part of a layer (taps = 3 rows of reads per
// output row), so no vector form.
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/launch_cuda.cuh"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

constexpr unsigned kThreads = 128;

template <typename T>
struct ShortConvParams {
  const T* bcx;
  std::size_t ldi;
  const float* w;
  T* out;
  std::size_t ldo;
  const int32_t* seq_starts;
  int num_seqs;
  unsigned n, taps;
  const int32_t* key_limits;  // or null
};

template <typename T>
__global__ void short_conv_kernel(ShortConvParams<T> p) {
  pdl::wait_for_predecessor();
  const unsigned c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= p.n) return;
  const int t = static_cast<int>(blockIdx.x);
  T* o = p.out + static_cast<std::size_t>(t) * p.ldo + c;
  if (t >= p.seq_starts[p.num_seqs]) {  // padding past the batch (a graph bucket)
    elem::store(o, 0.0f);
    return;
  }
  int lo = 0, hi = p.num_seqs;  // the last sequence whose start is ≤ t
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (p.seq_starts[mid] <= t) lo = mid; else hi = mid;
  }
  const int first = p.seq_starts[lo];
  if (p.key_limits && t - first >= p.key_limits[lo]) {  // a masked token (ops/short_conv.h)
    elem::store(o, 0.0f);
    return;
  }
  float acc = 0.0f;
  for (unsigned k = 0; k < p.taps; ++k) {
    const int j = t - static_cast<int>(p.taps - 1 - k);
    if (j < first) continue;  // before the sequence start: zero history
    const T* row = p.bcx + static_cast<std::size_t>(j) * p.ldi;
    const float bx = __fmul_rn(elem::load(row + c), elem::load(row + 2 * p.n + c));
    acc = __fadd_rn(acc, __fmul_rn(p.w[static_cast<std::size_t>(c) * p.taps + k], bx));
  }
  const float gate = elem::load(p.bcx + static_cast<std::size_t>(t) * p.ldi + p.n + c);
  elem::store(o, __fmul_rn(gate, acc));
}

}  // namespace

void short_conv_cuda(const ShortConvArgs& a, cudaStream_t stream) {
  check_short_conv(a, "short_conv (CUDA)");
  check(a.taps <= kShortConvMaxTaps, "short_conv: ", a.taps, " taps, above ", kShortConvMaxTaps, " (CUDA)");
  if (a.rows == 0 || a.num_seqs == 0) return;
  check(a.rows < (1u << 31), "short_conv: too many rows for one launch");
  check((a.n + kThreads - 1) / kThreads <= 65535, "short_conv: ", a.n, " channels, more than one launch takes");
  elem::dispatch(a.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    const ShortConvParams<T> p{static_cast<const T*>(a.bcx.data), a.bcx.ld, a.w, static_cast<T*>(a.out.data),
                               a.out.ld, a.seq_starts, static_cast<int>(a.num_seqs), static_cast<unsigned>(a.n),
                               static_cast<unsigned>(a.taps), a.key_limits};
    const dim3 grid(static_cast<unsigned>(a.rows), static_cast<unsigned>((a.n + kThreads - 1) / kThreads));
    pdl::launch(short_conv_kernel<T>, grid, kThreads, 0, stream, p);
  });
}

}  // namespace il::ops
