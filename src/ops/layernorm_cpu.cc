#include <cmath>
#include <vector>

#include "core/error.h"
#include "ops/layernorm.h"

namespace il::ops {

void layernorm_cpu(const LayerNormArgs& a, ThreadPool& pool) {
  check(a.x && a.w && a.out, "layernorm: null operand");
  check(a.cols > 0, "layernorm: zero columns");
  // At least ~16K values per chunk: waking the pool costs more than normalising fewer.
  const std::size_t grain = std::max<std::size_t>(1, 16384 / a.cols);
  pool.parallel_for(a.rows, grain, [&](std::size_t r0, std::size_t r1) {
    std::vector<float> v(a.cols);
    for (std::size_t r = r0; r < r1; ++r) {
      const float* x = a.x + r * a.ldx;
      const float* res = a.residual ? a.residual + r * a.ldr : nullptr;
      // Two passes over a row held in a local copy: the mean first, then the centred variance;
      // summed in double so long rows keep f32 parity with the double reference.
      double sum = 0.0;
      for (std::size_t j = 0; j < a.cols; ++j) {
        v[j] = res ? x[j] + res[j] : x[j];
        sum += v[j];
      }
      const float mean = a.rms ? 0.0f : static_cast<float>(sum / static_cast<double>(a.cols));
      double sq = 0.0;
      for (std::size_t j = 0; j < a.cols; ++j) {
        const float d = v[j] - mean;
        sq += static_cast<double>(d) * d;
      }
      const float inv =
          static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(a.cols) + a.eps));
      float* out = a.out + r * a.ldo;
      for (std::size_t j = 0; j < a.cols; ++j) {
        const float y = (v[j] - mean) * inv * a.w[j];
        out[j] = a.b ? y + a.b[j] : y;
      }
    }
  });
}

}  // namespace il::ops
