#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "ops/logits.h"

namespace il::ops {

void check_softmax_rows(const SoftmaxRowsArgs& a, const char* what) {
  check(a.x.data && a.out.data, what, ": null operand");
  check(a.x.dtype == DType::kF32, what, ": logits in must be F32, not ", dtype_name(a.x.dtype));
  check(a.x.ld >= a.cols && a.out.ld >= a.cols, what, ": row stride smaller than ", a.cols, " columns");
}

void check_softcap(const SoftcapArgs& a, const char* what) {
  check(a.x.data && a.out.data, what, ": null operand");
  check(a.out.dtype == DType::kF32, what, ": logits out must be F32, not ", dtype_name(a.out.dtype));
  check(a.cap > 0.0f, what, ": cap ", a.cap, " must be positive");
  check(a.x.ld >= a.cols && a.out.ld >= a.cols, what, ": row stride smaller than ", a.cols, " columns");
}

void check_row_argmax(const RowArgmaxArgs& a, const char* what) {
  check(a.x.data && a.out, what, ": null operand");
  check(a.cols > 0, what, ": rows of no columns have no maximum");
  check(a.x.ld >= a.cols, what, ": row stride smaller than ", a.cols, " columns");
  check(a.cols <= static_cast<std::size_t>(INT32_MAX), what, ": ", a.cols, " columns do not fit an int32 index");
}

void softmax_rows_cpu(const SoftmaxRowsArgs& a, ThreadPool& pool) {
  check_softmax_rows(a);
  const float* x = f32_data(a.x, "softmax");
  float* out = f32_data(a.out, "softmax");
  pool.parallel_for(a.rows, 1, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const float* xr = x + r * a.x.ld;
      float* o = out + r * a.out.ld;
      const float mx = *std::max_element(xr, xr + a.cols);
      if (mx == -INFINITY) {  // no distribution
        std::fill(o, o + a.cols, 0.0f);
        continue;
      }
      double sum = 0.0;
      for (std::size_t j = 0; j < a.cols; ++j) sum += (o[j] = std::exp(xr[j] - mx));
      const float k = static_cast<float>(a.scale / sum);
      for (std::size_t j = 0; j < a.cols; ++j) o[j] *= k;
    }
  });
}

void softcap_cpu(const SoftcapArgs& a, ThreadPool& pool) {
  check_softcap(a);
  const float* x = f32_data(a.x, "softcap");
  float* out = f32_data(a.out, "softcap");
  pool.parallel_for(a.rows, 4, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const float* xr = x + r * a.x.ld;
      float* o = out + r * a.out.ld;
      for (std::size_t j = 0; j < a.cols; ++j) o[j] = a.cap * std::tanh(xr[j] / a.cap);
    }
  });
}

void row_argmax_cpu(const RowArgmaxArgs& a, ThreadPool& pool) {
  check_row_argmax(a);
  const float* x = f32_data(a.x, "row argmax");
  pool.parallel_for(a.rows, 4, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const float* xr = x + r * a.x.ld;
      std::size_t best = 0;
      for (std::size_t j = 1; j < a.cols; ++j)
        if (xr[j] > xr[best]) best = j;
      a.out[r] = static_cast<int32_t>(best);
    }
  });
}

}  // namespace il::ops
