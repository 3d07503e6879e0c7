// Rotary embeddings on the CPU against a double-precision reference written from the two pairings'
// definitions: rotate-half (NeoX: x[j] with x[j + r/2]) and interleaved (GPT-J, nomic-bert's
// rotary_emb_interleaved: x[2j] with x[2j + 1]), over whole heads and a partial rotary width, with
// the columns past rotary_dim untouched.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/rope.h"
#include "reference.h"

namespace il::test {
namespace {

std::vector<float> reference(const std::vector<float>& x, const std::vector<int32_t>& pos, std::size_t ld,
                             std::size_t heads, std::size_t hd, std::size_t rdim, double theta, bool interleaved) {
  std::vector<float> out = x;
  const std::size_t half = rdim / 2;
  for (std::size_t r = 0; r < pos.size(); ++r)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t j = 0; j < half; ++j) {
        const double angle = pos[r] * std::pow(theta, -2.0 * static_cast<double>(j) / static_cast<double>(rdim));
        const std::size_t a = r * ld + h * hd + (interleaved ? 2 * j : j);
        const std::size_t b = a + (interleaved ? 1 : half);
        out[a] = static_cast<float>(x[a] * std::cos(angle) - x[b] * std::sin(angle));
        out[b] = static_cast<float>(x[b] * std::cos(angle) + x[a] * std::sin(angle));
      }
  return out;
}

TEST(Rope, BothPairingsMatchTheirDefinitionOnWholeAndPartialHeads) {
  ThreadPool pool(2);
  struct Case {
    std::size_t heads, hd, rdim;
    float theta;
  };
  for (const Case c : {Case{4, 16, 16, 1000.0f}, Case{4, 12, 6, 10000.0f}, Case{3, 64, 32, 10000.0f}})
    for (const bool interleaved : {false, true}) {
      const std::size_t rows = 37, ld = c.heads * c.hd + 5;  // a strided view: 5 columns after the heads
      std::vector<int32_t> pos(rows);
      for (std::size_t r = 0; r < rows; ++r) pos[r] = static_cast<int32_t>((r * 97) % 300);
      const std::vector<float> x = random_vector(rows * ld, 31 + static_cast<uint32_t>(c.rdim), 2.0f);
      std::vector<float> got = x;
      ops::RopeArgs a{ops::f32_view(got.data(), ld), pos.data(), rows, c.heads, c.hd, c.rdim, c.theta};
      a.interleaved = interleaved;
      ops::rope_cpu(a, pool);
      const std::vector<float> want = reference(x, pos, ld, c.heads, c.hd, c.rdim, c.theta, interleaved);
      const std::vector<float> other = reference(x, pos, ld, c.heads, c.hd, c.rdim, c.theta, !interleaved);
      double err = 0, gap = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        err = std::max(err, std::abs(static_cast<double>(got[i]) - want[i]));
        gap = std::max(gap, std::abs(static_cast<double>(got[i]) - other[i]));
      }
      // f32 angles (position · inv_freq rounded) against double ones: a few ulps of angles < 300.
      EXPECT_LE(err, 2e-4) << "heads " << c.heads << " hd " << c.hd << " rotary " << c.rdim << " interleaved "
                           << interleaved;
      EXPECT_GT(gap, 1e-2) << "the two pairings agree: the test could not tell them apart";
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t h = 0; h < c.heads; ++h)
          for (std::size_t col = c.rdim; col < c.hd; ++col) {
            const std::size_t i = r * ld + h * c.hd + col;
            ASSERT_EQ(got[i], x[i]) << "column " << col << " past rotary_dim changed";
          }
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t col = c.heads * c.hd; col < ld; ++col) ASSERT_EQ(got[r * ld + col], x[r * ld + col]);
    }
}

}  // namespace
}  // namespace il::test
