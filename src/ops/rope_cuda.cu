// Rotary position embedding (ops/rope.h) on the GPU, in place on a strided view. The angles are
// those of rope_cpu bit for bit: inv_freq comes from the same host function (rope_inv_freq,
// passed by value in the launch), the angle is one f32 product position · inv_freq[j], and its
// cosine and sine are evaluated in double and rounded to f32 (the CPU rounds std::cos / std::sin
// of the same double). The rotation is written with explicitly rounded products and sums, so the
// compiler fuses nothing the CPU does not: f32 results equal the CPU's. f16 / bf16 values load
// into f32 and round once on the store.
//
// One block per row: its first threads compute the row's cos / sin table into shared memory
// (shared by every head; with multi-axis sections each angle reads its own axis's position), then all rotate the heads' pairs (rotate-half or interleaved).
// With a head norm (fused q / k RMSNorm), each warp first normalises whole heads in place (f32
// sum of squares, a warp reduction, one rounding to the element type as the norm step stores
// it); the block barrier that follows the table also orders those stores before the rotation
// reads them. At a short batch this is one launch where a Qwen3 layer had four.
#include <algorithm>

#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/launch_cuda.cuh"
#include "ops/ops_cuda.h"
#include "ops/reduce_cuda.cuh"
#include "ops/rope.h"

namespace il::ops {
namespace {

template <typename T>
struct RopeParams {
  T* x;
  std::size_t ldx;
  const int32_t* positions;
  int heads, head_dim, half;
  int first, second;  // the pair of angle j: x[j · first], x[j · first + second]
  std::size_t axis_stride;  // multi-axis: angle j reads positions[axis[j] · axis_stride + row]
  const float* norm_first;  // null: no head norm
  const float* norm_rest;
  int norm_split;
  float norm_eps;
  float inv_freq[kRopeMaxRotaryDim / 2];
  unsigned char axis[kRopeMaxRotaryDim / 2];
};

template <typename T>
__global__ void rope_kernel(RopeParams<T> p) {
  pdl::wait_for_predecessor();
  __shared__ float cos_row[kRopeMaxRotaryDim / 2], sin_row[kRopeMaxRotaryDim / 2];
  const std::size_t r = blockIdx.x;
  for (int j = static_cast<int>(threadIdx.x); j < p.half; j += static_cast<int>(blockDim.x)) {
    const float pos = static_cast<float>(p.positions[p.axis[j] * p.axis_stride + r]);
    const double angle = __fmul_rn(pos, p.inv_freq[j]);  // rounded to f32, as transformers does
    double s = 0.0, c = 0.0;
    sincos(angle, &s, &c);
    cos_row[j] = static_cast<float>(c);
    sin_row[j] = static_cast<float>(s);
  }
  T* row = p.x + r * p.ldx;
  if (p.norm_first) {
    const int lane = static_cast<int>(threadIdx.x % 32), warps = static_cast<int>(blockDim.x / 32);
    for (int h = static_cast<int>(threadIdx.x / 32); h < p.heads; h += warps) {
      T* x = row + static_cast<std::size_t>(h) * p.head_dim;
      const float* w = h < p.norm_split ? p.norm_first : p.norm_rest;
      float sq = 0.0f;
      for (int j = lane; j < p.head_dim; j += 32) {
        const float v = elem::load(x + j);
        sq = __fadd_rn(sq, __fmul_rn(v, v));
      }
      sq = cuda_reduce::warp_sum(sq);
      const float inv = 1.0f / sqrtf(sq / static_cast<float>(p.head_dim) + p.norm_eps);
      for (int j = lane; j < p.head_dim; j += 32) elem::store(x + j, __fmul_rn(__fmul_rn(elem::load(x + j), inv), w[j]));
    }
  }
  __syncthreads();
  const int pairs = p.heads * p.half;
  for (int i = static_cast<int>(threadIdx.x); i < pairs; i += static_cast<int>(blockDim.x)) {
    const int h = i / p.half, j = i - h * p.half;
    T* x = row + static_cast<std::size_t>(h) * p.head_dim;
    T* pair = x + j * p.first;
    const float lo = elem::load(pair), hi = elem::load(pair + p.second);
    const float c = cos_row[j], s = sin_row[j];
    elem::store(pair, __fsub_rn(__fmul_rn(lo, c), __fmul_rn(hi, s)));
    elem::store(pair + p.second, __fadd_rn(__fmul_rn(hi, c), __fmul_rn(lo, s)));
  }
}

}  // namespace

void rope_cuda(const RopeArgs& a, cudaStream_t stream) {
  check_rope(a);
  check(a.rotary_dim <= kRopeMaxRotaryDim, "rope: rotary_dim ", a.rotary_dim, " above ", kRopeMaxRotaryDim, " (CUDA)");
  check(a.sections.size() <= 255, "rope: ", a.sections.size(), " position axes (CUDA takes up to 255)");
  check(a.heads * a.head_dim < (1u << 31), "rope: row too wide for one launch");
  if (a.rows == 0) return;
  check(a.rows < (1u << 31), "rope: too many rows for one launch");
  const int half = static_cast<int>(a.rotary_dim / 2);
  const int pairs = static_cast<int>(a.heads) * half;
  const unsigned threads = static_cast<unsigned>(std::min(256, (std::max(pairs, half) + 31) / 32 * 32));
  elem::dispatch(a.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    RopeParams<T> p{};
    p.x = static_cast<T*>(a.x.data);
    p.ldx = a.x.ld;
    p.positions = a.positions;
    p.heads = static_cast<int>(a.heads);
    p.head_dim = static_cast<int>(a.head_dim);
    p.half = half;
    p.first = a.interleaved ? 2 : 1;  // (2j, 2j + 1) interleaved, else (j, j + half)
    p.second = a.interleaved ? 1 : half;
    const RopeFrequencies freq = rope_frequencies(a);  // the CPU's table
    p.axis_stride = a.sections.empty() ? 0 : a.axis_stride;
    p.norm_first = a.norm_first;
    p.norm_rest = a.norm_rest;
    p.norm_split = static_cast<int>(a.norm_split);
    p.norm_eps = a.norm_eps;
    for (int j = 0; j < half; ++j) {
      p.inv_freq[j] = freq.inv_freq[static_cast<std::size_t>(j)];
      p.axis[j] = static_cast<unsigned char>(freq.axis[static_cast<std::size_t>(j)]);
    }
    pdl::launch(rope_kernel<T>, static_cast<unsigned>(a.rows), threads, 0, stream, p);
  });
}

}  // namespace il::ops
