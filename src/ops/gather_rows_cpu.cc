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

void check_sequence_window(const SequenceWindowArgs& a, const char* what) {
  check(a.x.data && a.out.data && a.seq_starts, what, ": null operand");
  check(a.taps % 2 == 1, what, ": ", a.taps, " taps (an odd count: the window is centred on its row)");
  check(a.x.ld >= a.cols && a.out.ld >= a.taps * a.cols, what, ": row stride smaller than the row");
  check(a.x.dtype == a.out.dtype, what, ": source and output differ in element type");
}

void sequence_window_cpu(const SequenceWindowArgs& a, ThreadPool& pool) {
  check_sequence_window(a);
  const float* x = f32_data(a.x, "sequence_window");
  float* out = f32_data(a.out, "sequence_window");
  const auto half = static_cast<std::ptrdiff_t>(a.taps / 2);
  pool.parallel_for(a.num_seqs, 1, [&](std::size_t s0, std::size_t s1) {
    for (std::size_t s = s0; s < s1; ++s) {
      const auto lo = static_cast<std::ptrdiff_t>(a.seq_starts[s]), hi = static_cast<std::ptrdiff_t>(a.seq_starts[s + 1]);
      for (std::ptrdiff_t t = lo; t < hi; ++t)
        for (std::size_t j = 0; j < a.taps; ++j) {
          float* dst = out + static_cast<std::size_t>(t) * a.out.ld + j * a.cols;
          const std::ptrdiff_t r = t + static_cast<std::ptrdiff_t>(j) - half;
          if (r < lo || r >= hi)
            std::fill(dst, dst + a.cols, 0.0f);
          else
            std::memcpy(dst, x + static_cast<std::size_t>(r) * a.x.ld, a.cols * sizeof(float));
        }
    }
  });
  for (std::size_t t = static_cast<std::size_t>(a.seq_starts[a.num_seqs]); t < a.rows; ++t)
    std::fill(out + t * a.out.ld, out + t * a.out.ld + a.taps * a.cols, 0.0f);
}

}  // namespace il::ops
