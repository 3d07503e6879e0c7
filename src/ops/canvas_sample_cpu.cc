#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "ops/canvas_sample.h"

namespace il::ops {

void check_canvas_sample(const CanvasSampleArgs& a, const char* what) {
  check(a.logits.data && a.processed.data && a.temperature && a.uniform && a.out, what, ": null operand");
  check(a.logits.dtype == DType::kF32 && a.processed.dtype == DType::kF32, what,
        ": logits must be F32, not ", dtype_name(a.logits.dtype), " / ", dtype_name(a.processed.dtype));
  check(a.logits.ld >= a.cols && a.processed.ld >= a.cols, what, ": row stride smaller than ", a.cols, " columns");
  check(a.cols > 0 && a.cols < (1u << 31), what, ": ", a.cols, " columns");
}

RowDraw row_entropy_argmax(std::span<const float> x) {
  RowDraw d;
  float mx = -INFINITY;
  for (std::size_t j = 0; j < x.size(); ++j)
    if (x[j] > mx) {
      mx = x[j];
      d.argmax = static_cast<int32_t>(j);
    }
  double z = 0.0, weighted = 0.0;
  for (float v : x) {
    const double diff = static_cast<double>(v) - mx, e = std::exp(diff);
    z += e;
    weighted += e * diff;
  }
  d.entropy = static_cast<float>(std::log(z) - weighted / z);
  return d;
}

int32_t inverse_cdf_draw(std::span<const float> x, double u) {
  const float mx = x.empty() ? 0.0f : *std::max_element(x.begin(), x.end());
  double z = 0.0;
  for (float v : x) z += std::exp(v - mx);
  double run = 0.0;
  int32_t last = 0;
  for (std::size_t j = 0; j < x.size(); ++j) {
    const float p = static_cast<float>(std::exp(x[j] - mx) / z);  // torch's f32 probabilities
    if (p <= 0.0f) continue;
    last = static_cast<int32_t>(j);
    run += p;
    if (run > u) return last;
  }
  return last;
}

void canvas_sample_cpu(const CanvasSampleArgs& a, ThreadPool& pool) {
  check_canvas_sample(a);
  const float* in = f32_data(a.logits, "canvas sample");
  float* out = f32_data(a.processed, "canvas sample");
  for (std::size_t r = 0; r < a.rows; ++r)
    check(a.temperature[r] > 0.0f && a.uniform[r] >= 0.0 && a.uniform[r] < 1.0, "canvas sample: row ", r,
          " has temperature ", a.temperature[r], " and uniform ", a.uniform[r]);
  pool.parallel_for(a.rows, 1, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const float* x = in + r * a.logits.ld;
      float* p = out + r * a.processed.ld;
      for (std::size_t j = 0; j < a.cols; ++j) p[j] = x[j] / a.temperature[r];
      const std::span<const float> row(p, a.cols);
      a.out[r] = row_entropy_argmax(row);
      a.out[r].sample = inverse_cdf_draw(row, a.uniform[r]);
    }
  });
}

}  // namespace il::ops
