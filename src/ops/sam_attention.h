// SAM's attention (ViTDet): multi-head attention over the square views of a batch, globally or in
// windows, with decomposed relative position. Per view of side g (rows view_starts[v] ..
// view_starts[v + 1], g · g of them, row-major), per head, query token (y, x):
//
//   score(j) = scale · q · k_j + q · Rh[qy − ky + S − 1] + q · Rw[qx − kx + S − 1]
//   out      = Σ_j softmax(score)_j · v_j
//
// global (window 0): every token of the view, S = g, coordinates in the view. Windowed: the view
// padded at the bottom and right to a multiple of the window, cut into window × window tiles in
// row-major order; a token sees its tile, S = window, coordinates in the tile. A padding position
// is a zero row through the qkv projection: its key and value are the projection's bias, and it
// takes part in every softmax of its tile unmasked, as in the reference (padding queries are not
// computed: they are cropped away). The relative terms use the unscaled q. No score matrix is
// materialised: per query, one row of scores.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"

namespace il::ops {

struct SamAttentionArgs {
  const float* qkv = nullptr;       // [rows, ld_qkv]: q | k | v, each heads · head_dim, heads contiguous
  std::size_t ld_qkv = 0;
  const float* qkv_bias = nullptr;  // [3 · heads · head_dim]: the padding positions' q | k | v
  float* out = nullptr;             // [rows, ldo]: heads · head_dim
  std::size_t ldo = 0;
  const int32_t* view_starts = nullptr;  // [views + 1]
  std::size_t views = 0;
  std::size_t heads = 0, head_dim = 0;
  std::size_t window = 0;           // 0: global
  // Per view: its relative position tables, [2S − 1, head_dim] each (the window's when windowed:
  // the same for every view; else resized to the view's side).
  const float* const* rel_h = nullptr;
  const float* const* rel_w = nullptr;
  float scale = 1.0f;
};

// The side of a square view of n tokens; throws il::Error when n is not a square.
std::size_t sam_view_side(std::size_t n, const char* what = "sam attention");

void check_sam_attention(const SamAttentionArgs& a, const char* what = "sam attention");
void sam_attention_cpu(const SamAttentionArgs& a, ThreadPool& pool);

}  // namespace il::ops
