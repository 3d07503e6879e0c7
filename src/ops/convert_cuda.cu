// Element type conversion on the device: weights are uploaded as f32 and converted once to the
// serving precision; tests use it to stage half inputs.
#include <algorithm>

#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

template <typename S, typename D>
__global__ void convert_kernel(const S* src, D* dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    elem::store(dst + i, elem::load(src + i));
}

}  // namespace

void convert_cuda(const ConvertArgs& a, cudaStream_t stream) {
  check(a.src.data && a.dst.data, "convert (CUDA): null operand");
  if (a.n == 0) return;
  constexpr unsigned kThreads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>((a.n + kThreads - 1) / kThreads, 65536));
  elem::dispatch(a.src.dtype, [&](auto s) {
    elem::dispatch(a.dst.dtype, [&](auto d) {
      using S = decltype(s);
      using D = decltype(d);
      convert_kernel<S, D><<<blocks, kThreads, 0, stream>>>(static_cast<const S*>(a.src.data),
                                                            static_cast<D*>(a.dst.data), a.n);
    });
  });
  IL_CUDA_CHECK_LAUNCH();
}

}  // namespace il::ops
