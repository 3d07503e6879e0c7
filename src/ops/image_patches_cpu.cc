#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "ops/image_patches.h"

namespace il::ops {

void patch_rows_cpu(const PatchRowsArgs& a) {
  float* const out = f32_data(a.out, "patch_rows");
  check(out && (a.rows || a.num_rows == 0) && a.out.ld >= a.cols, "patch_rows: null operand or short stride");
  for (std::size_t r = 0; r < a.launched_rows; ++r) {
    float* o = out + r * a.out.ld;
    if (r < a.num_rows) std::memcpy(o, a.rows + r * a.cols, a.cols * sizeof(float));
    else std::fill(o, o + a.cols, 0.0f);
  }
}

void add_position_cpu(const AddPositionArgs& a, ThreadPool& pool) {
  float* const out = f32_data(a.out, "add_position");
  const float* const table = f32_data(a.table, "add_position");
  check(out && table && a.positions && a.out.ld >= a.cols, "add_position: null operand or short stride");
  pool.parallel_for(a.num_rows, 16, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const float* p = table + static_cast<std::size_t>(a.positions[r]) * a.cols;
      float* o = out + r * a.out.ld;
      for (std::size_t c = 0; c < a.cols; ++c) o[c] += p[c];
    }
  });
}

}  // namespace il::ops
