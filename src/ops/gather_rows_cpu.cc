#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "ops/gather_rows.h"

namespace il::ops {

void check_gather_rows(const GatherRowsArgs& a, const char* what) {
  check(a.src.data && a.out.data && (a.index || a.rows == 0), what, ": null operand");
  check(a.taps > 0 && a.src.ld >= a.cols && a.out.ld >= a.taps * a.cols, what, ": row stride smaller than the row");
  check(a.src.dtype == a.out.dtype, what, ": source and output differ in element type");
}

void gather_rows_cpu(const GatherRowsArgs& a, ThreadPool& pool) {
  check_gather_rows(a);
  const float* src = f32_data(a.src, "gather_rows");
  float* out = f32_data(a.out, "gather_rows");
  pool.parallel_for(a.rows, 16, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      for (std::size_t t = 0; t < a.taps; ++t) {
        float* dst = out + r * a.out.ld + t * a.cols;
        const int32_t i = a.index[r * a.taps + t];
        if (i < 0)
          std::fill(dst, dst + a.cols, 0.0f);
        else
          std::memcpy(dst, src + static_cast<std::size_t>(i) * a.src.ld, a.cols * sizeof(float));
      }
    }
  });
}

}  // namespace il::ops
