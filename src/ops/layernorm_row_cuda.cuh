// One warp normalises one row: LayerNorm / RMSNorm of x (+ residual) in f32, mean then centred
// variance. Shared by the layer-norm kernel and the few-row GEMM that normalises its own output
// (ops/gemm_skinny_cuda.cu), so the fused path gives the separate kernels' bits.
//
// Chunk c of lane l holds columns [(32c + l)·V, +V) (V = kVec<T>), present when below cols (a
// multiple of V); kChunks ≥ the row's chunk count (a larger kChunks adds only skipped chunks, the
// summation order stays the same). Each row is read completely before any of it is written, so
// out may alias x or residual.
#pragma once

#include <cuda_runtime.h>

#include "ops/elem_cuda.cuh"
#include "ops/reduce_cuda.cuh"

namespace il::ops::norm {

// The most 16-byte vectors a lane holds: rows up to 2048 f16 / bf16 or 1024 f32 columns.
inline constexpr int kWarpMaxChunks = 8;

template <typename T>
struct RowParams {
  const T* x;
  std::size_t ldx;
  const T* residual;  // or null
  std::size_t ldr;
  const float* w;  // f32, 16-byte aligned
  const float* b;  // f32, 16-byte aligned, or null
  T* out;
  std::size_t ldo;
  int cols;
  float eps;
  bool rms;
};

// kFromL2: x was written by other blocks of the running kernel; read it past the L1 cache.
template <typename T, int kChunks, bool kFromL2 = false>
__device__ __forceinline__ void warp_row(const RowParams<T>& p, std::size_t r, int lane) {
  constexpr int V = elem::kVec<T>;
  const T* x = p.x + r * p.ldx;
  const T* res = p.residual ? p.residual + r * p.ldr : nullptr;
  float v[kChunks][V];
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int col = (c * 32 + lane) * V;
    if (col >= p.cols) continue;
    if constexpr (kFromL2) {
      union {
        uint4 raw;
        T e[V];
      } u;
      u.raw = __ldcg(reinterpret_cast<const uint4*>(x + col));
#pragma unroll
      for (int i = 0; i < V; ++i) v[c][i] = elem::load(&u.e[i]);
    } else {
      elem::load_vec(x + col, v[c]);
    }
  }
  if (res) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int col = (c * 32 + lane) * V;
      if (col < p.cols) {
        float add[V];
        elem::load_vec(res + col, add);
#pragma unroll
        for (int i = 0; i < V; ++i) v[c][i] += add[i];
      }
    }
  }
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
    if ((c * 32 + lane) * V < p.cols)
#pragma unroll
      for (int i = 0; i < V; ++i) sum += v[c][i];
  sum = cuda_reduce::warp_sum(sum);
  const float mean = p.rms ? 0.0f : sum / static_cast<float>(p.cols);
  float sq = 0.0f;
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
    if ((c * 32 + lane) * V < p.cols)
#pragma unroll
      for (int i = 0; i < V; ++i) sq += (v[c][i] - mean) * (v[c][i] - mean);
  sq = cuda_reduce::warp_sum(sq);
  // 1 / sqrt rather than rsqrtf: rsqrtf's 2-ulp error is avoidable here at no measurable cost.
  const float inv = 1.0f / sqrtf(sq / static_cast<float>(p.cols) + p.eps);
  T* out = p.out + r * p.ldo;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int col = (c * 32 + lane) * V;
    if (col >= p.cols) continue;
    float y[V];
#pragma unroll
    for (int i = 0; i < V; i += 4) {
      // The f32 weight and bias are 16-byte aligned at col (device allocations, col % 4 == 0).
      const float4 w = *reinterpret_cast<const float4*>(p.w + col + i);
      const float4 b = p.b ? *reinterpret_cast<const float4*>(p.b + col + i) : make_float4(0.f, 0.f, 0.f, 0.f);
      y[i + 0] = (v[c][i + 0] - mean) * inv * w.x + b.x;
      y[i + 1] = (v[c][i + 1] - mean) * inv * w.y + b.y;
      y[i + 2] = (v[c][i + 2] - mean) * inv * w.z + b.z;
      y[i + 3] = (v[c][i + 3] - mean) * inv * w.w + b.w;
    }
    elem::store_vec(out + col, y);
  }
}

// Whether rows of `cols` elements with these operands can take warp_row: every operand splits
// into aligned 16-byte vectors and the row fits in kWarpMaxChunks vectors per lane.
template <typename T>
inline bool warp_row_fits(const void* x, std::size_t ldx, const void* residual, std::size_t ldr, const float* w,
                          const float* b, const void* out, std::size_t ldo, std::size_t cols) {
  constexpr std::size_t V = elem::kVec<T>;
  const bool aligned = elem::vectorizable<T>(x, ldx, cols) && elem::vectorizable<T>(out, ldo, cols) &&
                       (!residual || elem::vectorizable<T>(residual, ldr, cols)) &&
                       elem::vectorizable<float>(w, 0, cols) && (!b || elem::vectorizable<float>(b, 0, cols));
  return aligned && (cols / V + 31) / 32 <= static_cast<std::size_t>(kWarpMaxChunks);
}

}  // namespace il::ops::norm
