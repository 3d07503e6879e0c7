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

void patch_bytes_cpu(const PatchBytesArgs& a, ThreadPool& pool) {
  float* const out = f32_data(a.out, "patch_bytes");
  const std::size_t C = a.channels, P = a.patch, cols = C * P * P;
  check(out && (a.num_rows == 0 || (a.bytes && a.byte_values)) && P > 0 && a.image_rows % P == 0 &&
            a.image_cols % P == 0 && a.out.ld >= cols && a.num_rows <= a.launched_rows,
        "patch_bytes: null operand, short stride or an image that is not whole patches");
  const std::size_t grid_cols = a.image_cols / P, n = (a.image_rows / P) * grid_cols;
  const std::size_t image_bytes = a.image_rows * a.image_cols * C;
  pool.parallel_for(a.launched_rows, 16, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      float* o = out + r * a.out.ld;
      if (r >= a.num_rows) {
        std::fill(o, o + cols, 0.0f);
        continue;
      }
      const std::size_t k = r % n, gy = k / grid_cols, gx = k % grid_cols;
      const std::uint8_t* image = a.bytes + (r / n) * image_bytes;
      for (std::size_t c = 0; c < C; ++c) {
        const float* values = a.byte_values + c * 256;
        for (std::size_t ky = 0; ky < P; ++ky) {
          const std::uint8_t* src = image + ((gy * P + ky) * a.image_cols + gx * P) * C + c;
          float* dst = o + (c * P + ky) * P;
          for (std::size_t kx = 0; kx < P; ++kx) dst[kx] = values[src[kx * C]];
        }
      }
    }
  });
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
