// Mixture of experts (plan::RouterStep, plan::MoeStep): route each token to its top-k experts,
// then run every chosen expert's gated MLP on the token and sum the results, weighted.
//
// The CPU ops are the reference: a loop over tokens and their chosen experts. The CUDA launchers
// (ops/ops_cuda.h) sort the (token, expert) pairs by expert on the device and run grouped GEMMs
// over the experts that received tokens, with no host round trip (graph-capturable): the
// workspace they need is sized by moe_workspace_bytes for the largest batch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "inferencelayer/types.h"
#include "ops/tensor_view.h"

namespace il::ops {

// Per token r: logits = x[r] · wᵀ (f32), p = softmax(logits), the top_k experts by p in
// descending order (ties: the lower index first), weights[r, j] = p[e_j] / Σ_j p[e_j] ·
// expert_scale[e_j] · scale; ids[r, j] = e_j. Without renormalize the division by Σ_j p[e_j] is
// left out (DeepSeek-V2's greedy router keeps the chosen softmax probabilities as they are).
struct RouterArgs {
  ConstTensorView x;                     // [rows, cols]
  const float* w = nullptr;              // [experts, cols], f32
  const float* expert_scale = nullptr;   // [experts], f32; null: 1
  int32_t* ids = nullptr;                // [rows, ld_ids ≥ top_k]
  std::size_t ld_ids = 0;
  float* weights = nullptr;              // [rows, ld_weights ≥ top_k]
  std::size_t ld_weights = 0;
  std::size_t rows = 0, cols = 0, experts = 0, top_k = 0;
  bool renormalize = true;
  float scale = 1.0f;                    // every weight's factor (routed_scaling_factor)
};

// out[r] = Σ_j weights[r, j] · down[e] · (act(g) ⊙ u), [g | u] = gate_up[e] · x[r] (g the first
// `inner` rows of gate_up[e]), e = ids[r, j]. Weights dense: gate_up [experts, 2 · inner, cols],
// down [experts, out_cols, inner], in x's element type on CUDA, f32 on the CPU. Intermediates in
// f32 on the CPU; on CUDA the GLU output is rounded to x's type (it feeds the down GEMM).
struct MoeArgs {
  ConstTensorView x;                     // [rows, cols]
  const int32_t* ids = nullptr;          // [rows, ld_ids]
  std::size_t ld_ids = 0;
  const float* weights = nullptr;        // [rows, ld_weights]
  std::size_t ld_weights = 0;
  ConstTensorView gate_up, down;         // dense (their ld is not read)
  TensorView out;                        // [rows, out_cols]
  std::size_t rows = 0, cols = 0, out_cols = 0, experts = 0, top_k = 0, inner = 0;
  Activation act = Activation::kGeluTanh;
  // CUDA: scratch of at least moe_workspace_bytes(rows, ...) bytes (the CPU op ignores it).
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// The checks both backends make: operands present, top_k in 1..experts, strides that fit.
void check_router(const RouterArgs& a, const char* what = "router");
void check_moe(const MoeArgs& a, const char* what = "moe");

void router_cpu(const RouterArgs& a, ThreadPool& pool);
// f32 operands only.
void moe_cpu(const MoeArgs& a, ThreadPool& pool);

// The CUDA MoE's scratch for up to `rows` tokens (sorted pair lists, per-expert counts and
// offsets, the gathered rows and the GLU rows in an element of `elem_bytes`).
std::size_t moe_workspace_bytes(std::size_t rows, std::size_t cols, std::size_t out_cols, std::size_t experts,
                                std::size_t top_k, std::size_t inner, std::size_t elem_bytes);

}  // namespace il::ops
