// The MAP head's attention with a learned query (ops/probe_attention.h) on the CPU against a
// double-precision reference: ragged sequences (1 key, many, an empty one which gives zeros),
// odd head counts and widths, strided k / v / out windows (columns outside them untouched).
// Tolerance 2e-5 absolute (1e-5 of outputs up to 2): f32 dot products and sums over 300 keys.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/thread_pool.h"
#include "ops/probe_attention.h"
#include "reference.h"

namespace il::ops {
namespace {

TEST(ProbeAttention, MatchesDoubleReference) {
  ThreadPool pool(2);
  uint32_t seed = 5;
  for (const auto& [heads, hd] : std::vector<std::pair<std::size_t, std::size_t>>{{1, 1}, {3, 7}, {4, 8}, {5, 33}})
    for (int layout = 0; layout < 2; ++layout) {
      const std::vector<int32_t> lens = {1, 300, 0, 17};
      std::vector<int32_t> starts = {0};
      for (int32_t l : lens) starts.push_back(starts.back() + l);
      const std::size_t T = static_cast<std::size_t>(starts.back()), w = heads * hd, S = lens.size();
      const std::size_t ld = layout ? 2 * w + 5 : 2 * w, off = layout ? 3 : 0;
      const std::size_t ldo = layout ? w + 4 : w, ooff = layout ? 1 : 0;
      const std::vector<float> kv = il::test::random_vector(T * ld, seed++, 2.0f);
      const std::vector<float> q = il::test::random_vector(w, seed++, 1.5f);
      const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
      std::vector<float> out(S * ldo, 0.75f);
      ProbeAttentionArgs a;
      a.q = q.data();
      a.k = f32_view(kv.data() + off, ld);
      a.v = f32_view(kv.data() + off + w, ld);
      a.out = f32_view(out.data() + ooff, ldo);
      a.seq_starts = starts.data();
      a.num_seqs = S;
      a.heads = heads;
      a.head_dim = hd;
      a.scale = scale;
      probe_attention_cpu(a, pool);
      for (std::size_t s = 0; s < S; ++s)
        for (std::size_t h = 0; h < heads; ++h) {
          const std::size_t b = static_cast<std::size_t>(starts[s]), e = static_cast<std::size_t>(starts[s + 1]);
          std::vector<double> p;
          double m = -INFINITY;
          for (std::size_t j = b; j < e; ++j) {
            double d = 0;
            for (std::size_t c = 0; c < hd; ++c) d += static_cast<double>(q[h * hd + c]) * kv[j * ld + off + h * hd + c];
            p.push_back(d * scale);
            m = std::max(m, p.back());
          }
          double sum = 0;
          for (double& x : p) sum += (x = std::exp(x - m));
          for (std::size_t c = 0; c < hd; ++c) {
            double want = 0;
            for (std::size_t j = b; j < e; ++j) want += p[j - b] / sum * kv[j * ld + off + w + h * hd + c];
            EXPECT_NEAR(out[s * ldo + ooff + h * hd + c], want, 1e-5 * 2.0)
                << "heads " << heads << " hd " << hd << " seq " << s << " head " << h << " col " << c;
          }
        }
      if (layout)
        for (std::size_t s = 0; s < S; ++s) {
          EXPECT_EQ(out[s * ldo], 0.75f) << "column before the window";
          for (std::size_t c = ooff + w; c < ldo; ++c) EXPECT_EQ(out[s * ldo + c], 0.75f) << "column after the window";
        }
    }
}

TEST(ProbeAttention, RefusesMismatchedOperands) {
  ThreadPool pool(1);
  std::vector<float> k(8), q(4), out(4);
  const std::vector<int32_t> starts = {0, 2};
  ProbeAttentionArgs a;
  a.q = q.data();
  a.k = f32_view(k.data(), 4);
  a.v = f32_view(k.data(), 4);
  a.out = f32_view(out.data(), 4);
  a.seq_starts = starts.data();
  a.num_seqs = 1;
  a.heads = 2;
  a.head_dim = 3;  // 6 columns do not fit rows of 4
  EXPECT_THROW(probe_attention_cpu(a, pool), Error);
}

}  // namespace
}  // namespace il::ops
