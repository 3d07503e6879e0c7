#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "ops/pool.h"

namespace il::ops {

void pool_cpu(const PoolArgs& a, ThreadPool& pool) {
  check(a.x.data && a.out.data && a.seq_starts, "pool: null operand");
  const float* const x = f32_data(a.x, "pool");
  float* const outs = f32_data(a.out, "pool");
  const std::size_t ldx = a.x.ld, ldo = a.out.ld;
  check(!a.one_row_per_sequence || a.mode != PoolingMode::kMean,
        "pool: one row per sequence (the selected rows) pools by CLS or last token only");
  if (a.pool_starts)  // checked here: an error inside the parallel section could not reach the caller
    for (std::size_t s = 0; s < a.num_seqs; ++s)
      check(a.pool_starts[s] >= a.seq_starts[s] && a.pool_starts[s] <= a.seq_starts[s + 1], "pool: sequence ", s,
            " pools from row ", a.pool_starts[s], ", outside [", a.seq_starts[s], ", ", a.seq_starts[s + 1], "]");
  pool.parallel_for(a.num_seqs, 1, [&](std::size_t s0, std::size_t s1) {
    std::vector<double> acc(a.cols);
    for (std::size_t s = s0; s < s1; ++s) {
      const std::size_t first = static_cast<std::size_t>(a.seq_starts[s]);
      const std::size_t end = static_cast<std::size_t>(a.seq_starts[s + 1]);
      const std::size_t begin =
          a.mode == PoolingMode::kCls || !a.pool_starts ? first : static_cast<std::size_t>(a.pool_starts[s]);
      float* out = outs + s * ldo;
      if (end == begin) {  // an empty range pools to zeros rather than reading its neighbour
        std::fill_n(out, a.cols, 0.0f);
        continue;
      }
      if (a.one_row_per_sequence) {
        std::memcpy(out, x + s * ldx, a.cols * sizeof(float));
        continue;
      }
      switch (a.mode) {
        case PoolingMode::kCls:
          std::memcpy(out, x + begin * ldx, a.cols * sizeof(float));
          break;
        case PoolingMode::kLastToken:
          std::memcpy(out, x + (end - 1) * ldx, a.cols * sizeof(float));
          break;
        case PoolingMode::kMean: {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (std::size_t r = begin; r < end; ++r) {
            const float* row = x + r * ldx;
            for (std::size_t j = 0; j < a.cols; ++j) acc[j] += row[j];
          }
          const double inv = 1.0 / static_cast<double>(end - begin);
          for (std::size_t j = 0; j < a.cols; ++j) out[j] = static_cast<float>(acc[j] * inv);
          break;
        }
      }
    }
  });
}

void l2_rows_cpu(const L2RowsArgs& a, ThreadPool& pool) {
  check(a.x.data != nullptr || a.rows == 0, "l2_rows: null operand");
  float* const x = f32_data(a.x, "l2_rows");
  const std::size_t ldx = a.x.ld;
  pool.parallel_for(a.rows, 64, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      float* row = x + r * ldx;
      double sq = 0.0;
      for (std::size_t j = 0; j < a.cols; ++j) sq += static_cast<double>(row[j]) * row[j];
      if (sq <= 0.0) continue;
      const float inv = static_cast<float>(1.0 / std::sqrt(sq));
      for (std::size_t j = 0; j < a.cols; ++j) row[j] *= inv;
    }
  });
}

}  // namespace il::ops
