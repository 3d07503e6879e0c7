// Rotary position embedding (the "rotate half" / NeoX form), in place: for each token, each of
// `heads` heads of head_dim columns, and j < rotary_dim / 2, the pair (x[j], x[j + rotary_dim / 2])
// is rotated by the angle position · inv_freq[j], inv_freq[j] = theta^(−2j / rotary_dim). With
// `interleaved` (the GPT-J form) the pair is (x[2j], x[2j + 1]) at the same angle. Columns past
// rotary_dim are left as they are. The angles follow transformers' float32 arithmetic
// (inv_freq and position · inv_freq rounded to f32, then cos / sin), in every compute precision.
//
// Multi-axis rotary (M-RoPE, 2-D vision rope): with `sections`, the rotary_dim / 2 angles are cut
// into consecutive groups of sections[g] angles, and angle j of group g turns by the token's
// position on axis g (positions[g · axis_stride + row]), with inv_freq index j (sections_restart
// false) or j's index inside its group (true), inv_freq[i] = theta^(−2i / freq_dim). The pairing
// (rotate-half or interleaved) is the same as without sections. GLM's text decoder takes sections
// (8, 12, 12) over (t, h, w) positions, interleaved, freq_dim = rotary_dim; its vision tower (16, 16)
// over (h, w), rotate-half, restarting, freq_dim = rotary_dim / 2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "ops/tensor_view.h"

namespace il::ops {

struct RopeArgs {
  TensorView x;                        // [rows, ≥ heads · head_dim], rotated in place
  const int32_t* positions = nullptr;  // [rows]
  std::size_t rows = 0;
  std::size_t heads = 0, head_dim = 0, rotary_dim = 0;
  float theta = 10000.0f;
  bool interleaved = false;            // pairs (2j, 2j + 1) instead of (j, j + rotary_dim / 2)
  // Multi-axis: empty, or group sizes summing to rotary_dim / 2; positions then holds
  // sections.size() axes of axis_stride (≥ rows) values each.
  std::span<const int> sections{};
  bool sections_restart = false;  // inv_freq index restarts at 0 in each group
  std::size_t freq_dim = 0;       // the exponent's denominator; 0: rotary_dim
  std::size_t axis_stride = 0;
  // 0: every pair turns; else pairs j ≥ active_pairs get inv_freq 0 (an angle of 0: unchanged).
  std::size_t active_pairs = 0;
  // Optional RMSNorm of every head before it turns (fused q / k norms): head h becomes
  // x / sqrt(mean(x²) + norm_eps) · w over its head_dim columns, w = norm_first for h < norm_split
  // and norm_rest after; the normalised value is rounded to x's element type, as the separate
  // norm step (ops/layernorm.h, group = head_dim) would store it, then rotated.
  const float* norm_first = nullptr;  // [head_dim], f32; null: no norm
  const float* norm_rest = nullptr;   // [head_dim], f32; needed when norm_split < heads
  std::size_t norm_split = 0;
  float norm_eps = 1e-6f;
};

// Each angle's inv_freq and the axis its position is read from (0 without sections), in angle
// order (rotary_dim / 2 entries): the one table the CPU and CUDA kernels share.
struct RopeFrequencies {
  std::vector<float> inv_freq;
  std::vector<int> axis;
};
RopeFrequencies rope_frequencies(const RopeArgs& a);

void check_rope(const RopeArgs& a, const char* what = "rope");
// f32 x only.
void rope_cpu(const RopeArgs& a, ThreadPool& pool);

// inv_freq[j] = theta^(−2j / rotary_dim), as transformers computes it in float32.
float rope_inv_freq(float theta, std::size_t j, std::size_t rotary_dim);

}  // namespace il::ops
