// The im2col of a 1-D convolution over each sequence (ops/gather_rows.h, sequence_window_cpu)
// against its definition written out row by row: ragged sequences (one of a single token, one
// empty), 1, 3 and 5 taps, strided views, and rows past the batch's tokens zeroed.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "ops/gather_rows.h"
#include "reference.h"

namespace il::test {
namespace {

TEST(SequenceWindow, EachRowSeesItsOwnSequencesNeighboursOnly) {
  ThreadPool pool(3);
  const std::vector<int32_t> starts{0, 6, 7, 7, 19};  // lengths 6, 1, 0, 12
  const std::size_t tokens = 19, rows = 21, cols = 5, ldx = 7;  // two launch-padding rows
  for (const std::size_t taps : {1, 3, 5}) {
    const std::size_t ldo = taps * cols + 2;
    const std::vector<float> x = random_vector(rows * ldx, 11 + static_cast<uint32_t>(taps), 1.0f);
    std::vector<float> out(rows * ldo, 9.0f);
    ops::sequence_window_cpu({ops::f32_view(x.data(), ldx), ops::f32_view(out.data(), ldo), starts.data(), 4, rows,
                              taps, cols},
                             pool);
    for (std::size_t s = 0; s + 1 < starts.size(); ++s)
      for (int32_t t = starts[s]; t < starts[s + 1]; ++t)
        for (std::size_t j = 0; j < taps; ++j) {
          const int32_t r = t + static_cast<int32_t>(j) - static_cast<int32_t>(taps / 2);
          const bool inside = r >= starts[s] && r < starts[s + 1];
          for (std::size_t c = 0; c < cols; ++c)
            ASSERT_EQ(out[static_cast<std::size_t>(t) * ldo + j * cols + c],
                      inside ? x[static_cast<std::size_t>(r) * ldx + c] : 0.0f)
                << "taps " << taps << " row " << t << " part " << j << " column " << c;
        }
    for (std::size_t t = tokens; t < rows; ++t)
      for (std::size_t c = 0; c < taps * cols; ++c) ASSERT_EQ(out[t * ldo + c], 0.0f) << "padding row " << t;
    for (std::size_t t = 0; t < rows; ++t)  // the columns past the parts are untouched
      for (std::size_t c = taps * cols; c < ldo; ++c) ASSERT_EQ(out[t * ldo + c], 9.0f);
  }
  std::vector<float> x(10), out(20);
  EXPECT_THROW(ops::check_sequence_window({ops::f32_view(x.data(), 5), ops::f32_view(out.data(), 10), starts.data(), 1,
                                           2, 2, 5}),
               Error);  // an even window has no centre
}

}  // namespace
}  // namespace il::test
