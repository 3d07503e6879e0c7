// The GEMM for a few rows (m ≤ kSkinnyMaxRows): y[m, n] = act(x[m, k] · W[n, k]ᵀ + bias[n]),
// f32 accumulation, bias and activation fused, one rounding of the result.
//
// Why: a short request (bge-base 1×16 is 16 token rows) makes every GEMM a weight stream with
// almost no arithmetic. cuBLASLt's kernels for such shapes take 5–10 µs each on the H200 (about
// 33 µs for f32 3072 × 768), far from the microsecond the weight bytes need, and the erf-GELU of
// the up-projection costs one more launch. Both kernels below read each weight byte once, in
// 16-byte vectors, consecutive lanes on consecutive vectors of a weight row (coalesced); x is a
// few rows, read from cache by every block.
// - f32: CUDA cores. A block owns kCols output columns; its warps split k; each lane multiplies
//   its weight vectors of the kCols rows with the same vectors of every x row.
// - f16 / bf16: tensor cores (mma m16n8k16). Converting every element to f32 for CUDA-core
//   FMAs made the f32-math version slower than cuBLASLt (bge-base 1×16 f16: 0.70 vs 0.44 ms),
//   the conversions outnumbering the multiply-adds. A block owns 8 output columns (the mma's
//   n); its warps split k in blocks of 32. In a block, lane (g, t) loads 8 consecutive k of
//   weight row g and of x rows g and g + 8 as one vector each, and feeds them to two mma as
//   their k positions 2t, 2t + 1, 2t + 8, 2t + 9: a permutation of k, the same for both
//   operands, which leaves the dot products unchanged and lets every load be 16 bytes.
// Partial sums are reduced across warps in shared memory, then biased, activated, stored.
#include <type_traits>

#include "ops/activation_cuda.cuh"
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/gemm_cuda.h"
#include "ops/launch_cuda.cuh"
#include "ops/mma_cuda.cuh"
#include "ops/reduce_cuda.cuh"

namespace il::ops {
namespace {

constexpr int kWarps = 4;
constexpr int kCols = 4;  // output columns per block

template <typename T>
struct SkinnyParams {
  const T* x;
  std::size_t ldx;
  const T* w;
  const T* bias;
  T* y;
  std::size_t ldy;
  int m, n, k;
  Activation act;
};

template <typename T>
__device__ __forceinline__ float activate(Activation a, float v) {
  switch (a) {
    case Activation::kNone: return v;
    case Activation::kGeluErf: return act::activate_for<Activation::kGeluErf, T>(v);
    case Activation::kGeluTanh: return act::activate<Activation::kGeluTanh>(v);
    case Activation::kSilu: return act::activate<Activation::kSilu>(v);
    case Activation::kRelu: return act::activate<Activation::kRelu>(v);
    case Activation::kTanh: return act::activate<Activation::kTanh>(v);
    case Activation::kQuickGelu: return act::activate<Activation::kQuickGelu>(v);
  }
  return v;
}

// kRows ≥ m: rows past m are neither read nor written (their sums stay zero).
template <typename T, int kRows>
__global__ void __launch_bounds__(kWarps * 32) skinny_gemm_kernel(SkinnyParams<T> p) {
  pdl::wait_for_predecessor();
  constexpr int V = elem::kVec<T>;
  __shared__ float partial[kWarps][kRows * kCols];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int n0 = static_cast<int>(blockIdx.x) * kCols;
  const int vecs = p.k / V;
  float acc[kRows][kCols] = {};
  for (int kv = warp * 32 + lane; kv < vecs; kv += kWarps * 32) {
    float w[kCols][V];
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      if (n0 + c < p.n) {
        elem::load_vec(p.w + static_cast<std::size_t>(n0 + c) * p.k + static_cast<std::size_t>(kv) * V, w[c]);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) w[c][e] = 0.0f;
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (r >= p.m) break;
      float x[V];
      elem::load_vec(p.x + static_cast<std::size_t>(r) * p.ldx + static_cast<std::size_t>(kv) * V, x);
#pragma unroll
      for (int c = 0; c < kCols; ++c)
#pragma unroll
        for (int e = 0; e < V; ++e) acc[r][c] = fmaf(x[e], w[c][e], acc[r][c]);
    }
  }
  // Every lane ends with every total of its warp; lane i % 32 stores value i.
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const float s = cuda_reduce::warp_sum(acc[r][c]);
      if ((r * kCols + c) % 32 == lane) partial[warp][r * kCols + c] = s;
    }
  __syncthreads();
  for (int i = static_cast<int>(threadIdx.x); i < kRows * kCols; i += kWarps * 32) {
    const int r = i / kCols, c = i % kCols;
    if (r >= p.m || n0 + c >= p.n) continue;
    float s = 0.0f;
#pragma unroll
    for (int wi = 0; wi < kWarps; ++wi) s += partial[wi][i];
    if (p.bias) s += elem::load(p.bias + n0 + c);
    elem::store(p.y + static_cast<std::size_t>(r) * p.ldy + n0 + c, activate<T>(p.act, s));
  }
}

constexpr int kTcCols = 8;  // the mma's n

// f16 / bf16 on tensor cores, any m ≤ 16 (rows past m are zero operands and never stored).
// How many of a warp's k blocks of weights are loaded before waiting for the predecessor.
constexpr int kTcPrefetch = 8;

// f16 / bf16 on tensor cores, any m ≤ 16 (rows past m are zero operands and never stored).
// The weights and bias are constants of the plan, so the first kTcPrefetch k blocks of each
// warp's weights (all of them up to k = 8 · 32 · warps) and the bias are loaded before the wait:
// under programmatic dependent launch that DRAM latency overlaps the previous kernel, and only
// x, which the previous kernel wrote, is read after it.
template <typename T, int kTcWarps>
__global__ void __launch_bounds__(kTcWarps * 32) skinny_gemm_tc_kernel(SkinnyParams<T> p) {
  __shared__ float partial[kTcWarps][16 * kTcCols];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4;
  const int n0 = static_cast<int>(blockIdx.x) * kTcCols;
  // Out-of-range rows and columns read a valid row (the last) and are zeroed after the load.
  const bool w_ok = n0 + g < p.n, lo_ok = g < p.m, hi_ok = g + 8 < p.m;
  const T* w_row = p.w + static_cast<std::size_t>(w_ok ? n0 + g : p.n - 1) * p.k;
  const T* x_lo = p.x + static_cast<std::size_t>(lo_ok ? g : p.m - 1) * p.ldx;
  const T* x_hi = p.x + static_cast<std::size_t>(hi_ok ? g + 8 : p.m - 1) * p.ldx;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  const int k_blocks = (p.k + 31) / 32;
  // Lane (g, t) of warp w holds chunk t of weight row g in k blocks w, w + warps, ...
  uint4 w_pre[kTcPrefetch];
#pragma unroll
  for (int j = 0; j < kTcPrefetch; ++j) {
    const int k = (warp + j * kTcWarps) * 32 + t * 8;  // a multiple of 8: a chunk is all in or all out
    w_pre[j] = w_ok && k < p.k ? __ldg(reinterpret_cast<const uint4*>(w_row + k)) : zero;
  }
  const int i = static_cast<int>(threadIdx.x);
  const int r = i / kTcCols, col = n0 + i % kTcCols;
  const bool stores = i < 16 * kTcCols && r < p.m && col < p.n;
  const float bias = stores && p.bias ? elem::load(p.bias + col) : 0.0f;
  pdl::wait_for_predecessor();
  float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const auto step = [&](int k, const uint4& w) {
    const bool k_ok = k < p.k;
    const uint4 lo = lo_ok && k_ok ? __ldg(reinterpret_cast<const uint4*>(x_lo + k)) : zero;
    const uint4 hi = hi_ok && k_ok ? __ldg(reinterpret_cast<const uint4*>(x_hi + k)) : zero;
    const uint32_t a0[4] = {lo.x, hi.x, lo.y, hi.y}, a1[4] = {lo.z, hi.z, lo.w, hi.w};
    tc::mma_m16n8k16<T>(c, a0, w.x, w.y);
    tc::mma_m16n8k16<T>(c, a1, w.z, w.w);
  };
#pragma unroll
  for (int j = 0; j < kTcPrefetch; ++j) {
    const int kb = warp + j * kTcWarps;
    if (kb >= k_blocks) break;
    step(kb * 32 + t * 8, w_pre[j]);
  }
#pragma unroll 8
  for (int kb = warp + kTcPrefetch * kTcWarps; kb < k_blocks; kb += kTcWarps) {
    const int k = kb * 32 + t * 8;
    step(k, w_ok && k < p.k ? __ldg(reinterpret_cast<const uint4*>(w_row + k)) : zero);
  }
  partial[warp][g * kTcCols + 2 * t] = c[0];
  partial[warp][g * kTcCols + 2 * t + 1] = c[1];
  partial[warp][(g + 8) * kTcCols + 2 * t] = c[2];
  partial[warp][(g + 8) * kTcCols + 2 * t + 1] = c[3];
  __syncthreads();
  if (!stores) return;
  float s = 0.0f;
#pragma unroll
  for (int wi = 0; wi < kTcWarps; ++wi) s += partial[wi][i];
  if (p.bias) s += bias;
  elem::store(p.y + static_cast<std::size_t>(r) * p.ldy + col, activate<T>(p.act, s));
}

template <typename T, int kRows>
void launch(const SkinnyParams<T>& p, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>((p.n + kCols - 1) / kCols);
  pdl::launch(skinny_gemm_kernel<T, kRows>, blocks, kWarps * 32, 0, stream, p);
}

}  // namespace

bool skinny_gemm_applies(const GemmCudaArgs& a) {
  if (a.transpose_w) return false;  // W's rows are read along k
  if (a.m == 0 || a.m > kSkinnyMaxRows || a.n >= (std::size_t{1} << 30) || a.k >= (std::size_t{1} << 30)) return false;
  bool ok = false;
  elem::dispatch(a.type(), [&](auto tag) {
    using T = decltype(tag);
    ok = elem::vectorizable<T>(a.x.data, a.x.ld, a.k) && elem::vectorizable<T>(a.w.data, a.k, a.k);
  });
  return ok;
}

void skinny_gemm_cuda(const GemmCudaArgs& a, cudaStream_t stream) {
  check(skinny_gemm_applies(a), "skinny gemm: shape or alignment it does not handle (m ", a.m, ", k ", a.k, ")");
  elem::dispatch(a.type(), [&](auto tag) {
    using T = decltype(tag);
    const SkinnyParams<T> p{static_cast<const T*>(a.x.data), a.x.ld, static_cast<const T*>(a.w.data),
                            static_cast<const T*>(a.bias.data), static_cast<T*>(a.y.data), a.y.ld,
                            static_cast<int>(a.m), static_cast<int>(a.n), static_cast<int>(a.k), a.act};
    if constexpr (std::is_same_v<T, float>) {
      if (a.m <= 1) return launch<T, 1>(p, stream);
      if (a.m <= 2) return launch<T, 2>(p, stream);
      if (a.m <= 4) return launch<T, 4>(p, stream);
      if (a.m <= 8) return launch<T, 8>(p, stream);
      return launch<T, kSkinnyMaxRows>(p, stream);
    } else {
      static_assert(kSkinnyMaxRows <= 16, "one m16 tile");
      const auto blocks = static_cast<unsigned>((p.n + kTcCols - 1) / kTcCols);
      // Long rows split over more warps: each warp then has at most about 8 blocks of k, whose
      // loads are all in flight together.
      if (p.k >= 2048) return pdl::launch(skinny_gemm_tc_kernel<T, 16>, blocks, 16 * 32, 0, stream, p);
      pdl::launch(skinny_gemm_tc_kernel<T, 8>, blocks, 8 * 32, 0, stream, p);
    }
  });
}

}  // namespace il::ops
