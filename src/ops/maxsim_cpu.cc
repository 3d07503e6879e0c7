#include <algorithm>
#include <limits>

#include "core/error.h"
#include "ops/maxsim.h"

namespace il::ops {

void check_maxsim(const MaxSimArgs& a, const char* what) {
  check(a.x.data && a.seq_starts && a.scores && (a.pairs || a.num_pairs == 0), what, ": null operand");
  check(a.dim > 0 && a.x.ld >= a.dim, what, ": dim ", a.dim, " outside the row stride ", a.x.ld);
}

void maxsim_cpu(const MaxSimArgs& a, ThreadPool& pool) {
  check_maxsim(a);
  const float* const x = f32_data(a.x, "maxsim");
  const std::size_t ld = a.x.ld, dim = a.dim;
  for (std::size_t p = 0; p < a.num_pairs; ++p)
    for (int k = 0; k < 2; ++k) {
      const int32_t s = a.pairs[2 * p + k];
      check(s >= 0 && static_cast<std::size_t>(s) < a.num_seqs, "maxsim: pair ", p, " names sequence ", s, " of ",
            a.num_seqs);
    }
  pool.parallel_for(a.num_pairs, 1, [&](std::size_t p0, std::size_t p1) {
    for (std::size_t p = p0; p < p1; ++p) {
      const auto q = static_cast<std::size_t>(a.pairs[2 * p]), d = static_cast<std::size_t>(a.pairs[2 * p + 1]);
      float total = 0.0f;
      for (int32_t i = a.seq_starts[q]; i < a.seq_starts[q + 1]; ++i) {
        const float* xi = x + static_cast<std::size_t>(i) * ld;
        float best = -std::numeric_limits<float>::infinity();
        for (int32_t j = a.seq_starts[d]; j < a.seq_starts[d + 1]; ++j) {
          if (a.keep && !a.keep[j]) continue;
          const float* xj = x + static_cast<std::size_t>(j) * ld;
          float dot = 0.0f;
          for (std::size_t c = 0; c < dim; ++c) dot += xi[c] * xj[c];
          best = std::max(best, dot);
        }
        if (best != -std::numeric_limits<float>::infinity()) total += best;  // no kept row: nothing
      }
      a.scores[p] = total;
    }
  });
}

}  // namespace il::ops
