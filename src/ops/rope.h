// Rotary position embedding (the "rotate half" / NeoX form), in place: for each token, each of
// `heads` heads of head_dim columns, and j < rotary_dim / 2, the pair (x[j], x[j + rotary_dim / 2])
// is rotated by the angle position · inv_freq[j], inv_freq[j] = theta^(−2j / rotary_dim). With
// `interleaved` (the GPT-J form) the pair is (x[2j], x[2j + 1]) at the same angle. Columns past
// rotary_dim are left as they are. The angles follow transformers' float32 arithmetic
// (inv_freq and position · inv_freq rounded to f32, then cos / sin), in every compute precision.
#pragma once

#include <cstddef>
#include <cstdint>

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
};

void check_rope(const RopeArgs& a, const char* what = "rope");
// f32 x only.
void rope_cpu(const RopeArgs& a, ThreadPool& pool);

// inv_freq[j] for j < rotary_dim / 2, as transformers computes it in float32.
float rope_inv_freq(float theta, std::size_t j, std::size_t rotary_dim);

}  // namespace il::ops
