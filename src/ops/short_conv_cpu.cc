#include <algorithm>

#include "core/error.h"
#include "ops/short_conv.h"

namespace il::ops {

void check_short_conv(const ShortConvArgs& a, const char* what) {
  check(a.bcx.data && a.out.data && a.w && a.seq_starts, what, ": null operand");
  check(a.bcx.dtype == a.out.dtype, what, ": input ", dtype_name(a.bcx.dtype), " and output ",
        dtype_name(a.out.dtype), " differ in element type");
  check(a.n > 0 && a.taps > 0, what, ": no channels or no taps");
  check(a.bcx.ld >= 3 * a.n && a.out.ld >= a.n, what, ": row strides (", a.bcx.ld, ", ", a.out.ld, ") too small for ",
        a.n, " channels (input B | C | x: ", 3 * a.n, " columns)");
  check(a.bcx.data != a.out.data, what, ": output overlaps the input");
}

void short_conv_cpu(const ShortConvArgs& a, ThreadPool& pool) {
  check_short_conv(a);
  const float* const in = f32_data(a.bcx, "short_conv");
  float* const out = f32_data(a.out, "short_conv");
  const std::size_t n = a.n, taps = a.taps, ldi = a.bcx.ld, ldo = a.out.ld;
  const int32_t* const starts = a.seq_starts;
  const int32_t end = starts[a.num_seqs];
  const std::size_t grain = std::max<std::size_t>(1, 4096 / n);
  pool.parallel_for(a.rows, grain, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      float* o = out + r * ldo;
      const auto t = static_cast<int32_t>(r);
      if (t >= end) {  // padding rows past the batch
        std::fill(o, o + n, 0.0f);
        continue;
      }
      // The start of the last sequence whose start is ≤ t (empty sequences are skipped over).
      const int32_t* s = std::upper_bound(starts, starts + a.num_seqs + 1, t) - 1;
      const std::size_t first = static_cast<std::size_t>(*s);
      if (a.key_limits && r - first >= static_cast<std::size_t>(std::max(a.key_limits[s - starts], 0))) {
        std::fill(o, o + n, 0.0f);  // a masked token
        continue;
      }
      const float* gate = in + r * ldi + n;  // C
      for (std::size_t c = 0; c < n; ++c) {
        float acc = 0.0f;
        for (std::size_t k = 0; k < taps; ++k) {
          const std::size_t back = taps - 1 - k;  // how many rows before r tap k reads
          if (back > r - first) continue;         // before the sequence start: zero history
          const float* row = in + (r - back) * ldi;
          acc += a.w[c * taps + k] * (row[c] * row[2 * n + c]);  // w · (B ⊙ x)
        }
        o[c] = gate[c] * acc;
      }
    }
  });
}

}  // namespace il::ops
