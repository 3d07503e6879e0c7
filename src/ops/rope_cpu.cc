#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "core/error.h"
#include "ops/layernorm.h"
#include "ops/rope.h"

namespace il::ops {

float rope_inv_freq(float theta, std::size_t j, std::size_t rotary_dim) {
  // transformers: 1 / theta ** (arange(0, dim, 2).float() / dim), in float32.
  const float exponent = static_cast<float>(2 * j) / static_cast<float>(rotary_dim);
  const float power = static_cast<float>(std::pow(static_cast<double>(theta), static_cast<double>(exponent)));
  return 1.0f / power;
}

void check_rope(const RopeArgs& a, const char* what) {
  check(a.x.data && a.positions, what, ": null operand");
  check(a.heads > 0 && a.head_dim > 0, what, ": no heads");
  check(a.rotary_dim > 0 && a.rotary_dim % 2 == 0 && a.rotary_dim <= a.head_dim, what, ": rotary_dim ", a.rotary_dim,
        " must be even and at most head_dim ", a.head_dim);
  check(a.x.ld >= a.heads * a.head_dim, what, ": row stride ", a.x.ld, " smaller than heads × head_dim");
  check(a.active_pairs == 0 || a.sections.empty(), what, ": active_pairs applies to single-axis rope only");
  if (a.norm_first || a.norm_rest) {
    check(a.norm_first && a.norm_split <= a.heads, what, ": a head norm needs its first weight and a split (",
          a.norm_split, ") within the ", a.heads, " heads");
    check(a.norm_split == a.heads || a.norm_rest, what, ": heads ", a.norm_split, " to ", a.heads,
          " have no norm weight");
  }
  if (a.sections.empty()) return;
  std::size_t total = 0, widest = 0;
  for (const int g : a.sections) {
    check(g > 0, what, ": section of ", g, " frequencies");
    total += static_cast<std::size_t>(g);
    widest = std::max(widest, static_cast<std::size_t>(g));
  }
  check(total == a.rotary_dim / 2, what, ": sections sum to ", total, " frequencies, rotary_dim ", a.rotary_dim,
        " has ", a.rotary_dim / 2);
  const std::size_t freq_dim = a.freq_dim == 0 ? a.rotary_dim : a.freq_dim;
  const std::size_t indices = a.sections_restart ? widest : total;
  check(2 * indices <= freq_dim, what, ": freq_dim ", freq_dim, " too small for ", indices, " inverse frequencies");
  check(a.axis_stride >= a.rows, what, ": axis stride ", a.axis_stride, " shorter than the ", a.rows, " rows");
}

RopeFrequencies rope_frequencies(const RopeArgs& a) {
  const std::size_t half = a.rotary_dim / 2;
  RopeFrequencies f{std::vector<float>(half), std::vector<int>(half, 0)};
  if (a.sections.empty()) {
    // Proportional rope: the pairs past active_pairs get no frequency (an angle of 0 leaves them
    // exactly as they are), the exponent still over the whole rotary_dim.
    const std::size_t active = a.active_pairs == 0 ? half : std::min(a.active_pairs, half);
    for (std::size_t j = 0; j < active; ++j) f.inv_freq[j] = rope_inv_freq(a.theta, j, a.rotary_dim);
    return f;
  }
  const std::size_t freq_dim = a.freq_dim == 0 ? a.rotary_dim : a.freq_dim;
  std::size_t j = 0;
  for (std::size_t g = 0; g < a.sections.size(); ++g)
    for (int i = 0; i < a.sections[g]; ++i, ++j) {
      f.inv_freq[j] = rope_inv_freq(a.theta, a.sections_restart ? static_cast<std::size_t>(i) : j, freq_dim);
      f.axis[j] = static_cast<int>(g);
    }
  return f;
}

void rope_cpu(const RopeArgs& a, ThreadPool& pool) {
  check_rope(a);
  float* const xs = f32_data(a.x, "rope");
  if (a.norm_first) {  // the q / k norms first, by the norm op itself: the same values as two norm steps
    const std::pair<std::size_t, std::size_t> parts[] = {{0, a.norm_split}, {a.norm_split, a.heads}};
    for (const auto& [from, to] : parts) {
      if (from == to) continue;
      const TensorView heads = f32_view(xs + from * a.head_dim, a.x.ld);
      LayerNormArgs n{heads, {}, from == 0 ? a.norm_first : a.norm_rest, nullptr, heads, a.rows,
                      (to - from) * a.head_dim, a.norm_eps, true};
      n.group = a.head_dim;
      layernorm_cpu(n, pool);
    }
  }
  const std::size_t ldx = a.x.ld;
  const std::size_t half = a.rotary_dim / 2;
  const RopeFrequencies freq = rope_frequencies(a);
  pool.parallel_for(a.rows, 16, [&](std::size_t r0, std::size_t r1) {
    std::vector<float> cos_row(half), sin_row(half);
    for (std::size_t r = r0; r < r1; ++r) {
      for (std::size_t j = 0; j < half; ++j) {
        const float p = static_cast<float>(a.positions[static_cast<std::size_t>(freq.axis[j]) * a.axis_stride + r]);
        const double angle = static_cast<double>(p * freq.inv_freq[j]);  // rounded to f32 as transformers does
        cos_row[j] = static_cast<float>(std::cos(angle));
        sin_row[j] = static_cast<float>(std::sin(angle));
      }
      float* row = xs + r * ldx;
      // The pair of angle j: (j, j + half), or (2j, 2j + 1) interleaved.
      const std::size_t first = a.interleaved ? 2 : 1, second = a.interleaved ? 1 : half;
      for (std::size_t h = 0; h < a.heads; ++h) {
        float* x = row + h * a.head_dim;
        for (std::size_t j = 0; j < half; ++j) {
          float* p = x + j * first;
          const float lo = p[0], hi = p[second];
          p[0] = lo * cos_row[j] - hi * sin_row[j];
          p[second] = hi * cos_row[j] + lo * sin_row[j];
        }
      }
    }
  });
}

}  // namespace il::ops
