// Row ops over logits (ops/logits.h) on the GPU.
//
// softmax_rows: one block per row, three passes over the row (maximum, sum of exponentials,
// scaled store), all in f32 with the accurate expf (the CPU op sums in double: the difference is
// the f32 sum's rounding, a few units in the last place over a vocabulary). A row whose maximum is
// −inf (no distribution) is stored as zeros. Each element is read and written by the same thread
// in the last pass, so out may be x (both f32).
// softcap: one block per row, cap · tanh(x / cap) elementwise, x loaded into f32, out f32.
// row_argmax: one block per row; each thread keeps the first largest of the columns it strides
// over (its indices ascend), then the block keeps the larger, on a tie the lower index.
#include <climits>
#include <cmath>
#include <cstdint>

#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/launch_cuda.cuh"
#include "ops/logits.h"
#include "ops/ops_cuda.h"
#include "ops/reduce_cuda.cuh"

namespace il::ops {
namespace {

constexpr int kSoftmaxThreads = 512;
constexpr int kSoftcapThreads = 256;
constexpr int kArgmaxThreads = 512;

// The block's maximum, returned to every thread (scratch: one value per warp; the leading
// barrier lets the scratch be reused right after another reduction).
__device__ __forceinline__ float block_max(float v, float* scratch) {
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int warps = (static_cast<int>(blockDim.x) + 31) / 32;
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(cuda_reduce::kFullMask, v, o));
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float m = -INFINITY;
  for (int w = 0; w < warps; ++w) m = fmaxf(m, scratch[w]);
  return m;
}

// x's rows read four at a time where they are 16-byte aligned (the 262,144-logit rows of
// DiffusionGemma's self-conditioning: scalar loads left the kernel latency-bound at 4.3 ms for
// 256 rows); each thread stores what it read itself.
template <typename T, bool kVec4>
__global__ void softmax_rows_kernel(const float* x, std::size_t ldx, T* out, std::size_t ldo, int cols, float scale) {
  pdl::wait_for_predecessor();
  __shared__ float scratch[kSoftmaxThreads / 32];
  const std::size_t r = blockIdx.x;
  const float* xr = x + r * ldx;
  T* o = out + r * ldo;
  const int tid = static_cast<int>(threadIdx.x), step = static_cast<int>(blockDim.x);
  const int n4 = kVec4 ? cols / 4 : 0;
  const float4* x4 = reinterpret_cast<const float4*>(xr);
  float mx = -INFINITY;
  if constexpr (kVec4) {
#pragma unroll 4
    for (int i = tid; i < n4; i += step) {
      const float4 v = x4[i];
      mx = fmaxf(mx, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    }
  } else {
    for (int j = tid; j < cols; j += step) mx = fmaxf(mx, xr[j]);
  }
  mx = block_max(mx, scratch);
  if (mx == -INFINITY) {  // no distribution
    for (int j = tid; j < cols; j += step) elem::store(o + j, 0.0f);
    return;
  }
  float sum = 0.0f;
  if constexpr (kVec4) {
#pragma unroll 4
    for (int i = tid; i < n4; i += step) {
      const float4 v = x4[i];
      sum += (expf(v.x - mx) + expf(v.y - mx)) + (expf(v.z - mx) + expf(v.w - mx));
    }
  } else {
    for (int j = tid; j < cols; j += step) sum += expf(xr[j] - mx);
  }
  sum = cuda_reduce::block_sum(sum, scratch);
  const float k = scale / sum;
  if constexpr (kVec4) {
#pragma unroll 4
    for (int i = tid; i < n4; i += step) {
      const float4 v = x4[i];
      T* oi = o + 4 * i;
      elem::store(oi, expf(v.x - mx) * k);
      elem::store(oi + 1, expf(v.y - mx) * k);
      elem::store(oi + 2, expf(v.z - mx) * k);
      elem::store(oi + 3, expf(v.w - mx) * k);
    }
  } else {
    for (int j = tid; j < cols; j += step) elem::store(o + j, expf(xr[j] - mx) * k);
  }
}

template <typename T>
__global__ void softcap_kernel(const T* x, std::size_t ldx, float* out, std::size_t ldo, int cols, float cap) {
  pdl::wait_for_predecessor();
  const std::size_t r = blockIdx.x;
  const T* xr = x + r * ldx;
  float* o = out + r * ldo;
  for (int j = static_cast<int>(threadIdx.x); j < cols; j += static_cast<int>(blockDim.x))
    o[j] = cap * tanhf(elem::load(xr + j) / cap);
}

// Ties and NaN as the host scan (ops/logits.h): a value wins only by being strictly larger, so a
// NaN never does; the start (−inf, no index) means a row of −inf finds nothing and gives 0, as
// does a row whose first value is NaN (the host scan keeps index 0 against every later value).
template <typename T>
__global__ void row_argmax_kernel(const T* x, std::size_t ldx, int cols, int32_t* out) {
  pdl::wait_for_predecessor();
  __shared__ float s_max[kArgmaxThreads / 32];
  __shared__ int s_at[kArgmaxThreads / 32];
  const std::size_t r = blockIdx.x;
  const T* xr = x + r * ldx;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  float mv = -INFINITY;
  int mi = INT_MAX;
#pragma unroll 4
  for (int j = tid; j < cols; j += kArgmaxThreads) {
    const float v = elem::load(xr + j);
    if (v > mv) mv = v, mi = j;
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(cuda_reduce::kFullMask, mv, o);
    const int oi = __shfl_xor_sync(cuda_reduce::kFullMask, mi, o);
    if (ov > mv || (ov == mv && oi < mi)) mv = ov, mi = oi;
  }
  if (lane == 0) s_max[warp] = mv, s_at[warp] = mi;
  __syncthreads();
  if (tid != 0) return;
  for (int w = 1; w < kArgmaxThreads / 32; ++w)
    if (s_max[w] > mv || (s_max[w] == mv && s_at[w] < mi)) mv = s_max[w], mi = s_at[w];
  out[r] = mi == INT_MAX || isnan(elem::load(xr)) ? 0 : mi;
}

}  // namespace

void row_argmax_cuda(const RowArgmaxArgs& a, cudaStream_t stream) {
  check_row_argmax(a, "row argmax (CUDA)");
  if (a.rows == 0) return;
  check(a.rows < (1u << 31), "row argmax (CUDA): ", a.rows, " rows too many for one launch");
  elem::dispatch(a.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    pdl::launch(row_argmax_kernel<T>, static_cast<unsigned>(a.rows), kArgmaxThreads, 0, stream,
                static_cast<const T*>(a.x.data), a.x.ld, static_cast<int>(a.cols), a.out);
  });
}

void softmax_rows_cuda(const SoftmaxRowsArgs& a, cudaStream_t stream) {
  check_softmax_rows(a, "softmax (CUDA)");
  if (a.rows == 0 || a.cols == 0) return;
  check(a.rows < (1u << 31) && a.cols < (1u << 31), "softmax (CUDA): ", a.rows, " × ", a.cols, " too large for one launch");
  elem::dispatch(a.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    const bool vec4 = elem::vectorizable<float>(a.x.data, a.x.ld, a.cols);
    pdl::launch(vec4 ? softmax_rows_kernel<T, true> : softmax_rows_kernel<T, false>, static_cast<unsigned>(a.rows),
                kSoftmaxThreads, 0, stream, static_cast<const float*>(a.x.data), a.x.ld, static_cast<T*>(a.out.data),
                a.out.ld, static_cast<int>(a.cols), a.scale);
  });
}

void softcap_cuda(const SoftcapArgs& a, cudaStream_t stream) {
  check_softcap(a, "softcap (CUDA)");
  if (a.rows == 0 || a.cols == 0) return;
  check(a.rows < (1u << 31) && a.cols < (1u << 31), "softcap (CUDA): ", a.rows, " × ", a.cols, " too large for one launch");
  elem::dispatch(a.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    pdl::launch(softcap_kernel<T>, static_cast<unsigned>(a.rows), kSoftcapThreads, 0, stream,
                static_cast<const T*>(a.x.data), a.x.ld, static_cast<float*>(a.out.data), a.out.ld,
                static_cast<int>(a.cols), a.cap);
  });
}

}  // namespace il::ops
