#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ops/attention.h"
#include "reference.h"

namespace il::test {
namespace {

struct AttnCase {
  std::vector<int32_t> lengths;
  std::size_t heads, kv_heads, head_dim;
  ops::MaskMode mask;
  std::size_t window;
  std::vector<int32_t> key_limits = {};  // empty, or per sequence: keys past it hidden from every row
};

// Full softmax attention per sequence in double: the definition the op must match.
std::vector<float> attention_ref(const AttnCase& c, const std::vector<float>& q, std::size_t ldq,
                                 const std::vector<float>& k, const std::vector<float>& v,
                                 std::size_t ldkv, float scale) {
  std::size_t total = 0;
  for (int32_t l : c.lengths) total += static_cast<std::size_t>(l);
  const std::size_t hd = c.head_dim, width = c.heads * hd;
  std::vector<float> out(total * width, 0.0f);
  std::size_t start = 0;
  for (std::size_t seq = 0; seq < c.lengths.size(); ++seq) {
    const std::size_t len = static_cast<std::size_t>(c.lengths[seq]);
    const std::size_t limit = c.key_limits.empty() ? len : static_cast<std::size_t>(c.key_limits[seq]);
    for (std::size_t h = 0; h < c.heads; ++h) {
      const std::size_t kh = h / (c.heads / c.kv_heads);
      for (std::size_t i = 0; i < len; ++i) {
        std::vector<double> s(len, -INFINITY);
        double mx = -INFINITY;
        for (std::size_t j = 0; j < len; ++j) {
          if (c.mask == ops::MaskMode::kCausal && j > i) continue;
          if (c.window && (i > j ? i - j : j - i) > c.window / 2) continue;
          if (j >= limit) continue;
          double acc = 0;
          for (std::size_t d = 0; d < hd; ++d)
            acc += static_cast<double>(q[(start + i) * ldq + h * hd + d]) * k[(start + j) * ldkv + kh * hd + d];
          s[j] = acc * scale;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (double& e : s) {
          e = std::isinf(e) ? 0.0 : std::exp(e - mx);
          sum += e;
        }
        for (std::size_t d = 0; d < hd; ++d) {
          double acc = 0;
          for (std::size_t j = 0; j < len; ++j) acc += s[j] / sum * v[(start + j) * ldkv + kh * hd + d];
          out[(start + i) * width + h * hd + d] = static_cast<float>(acc);
        }
      }
    }
    start += len;
  }
  return out;
}

class AttentionTest : public ::testing::TestWithParam<AttnCase> {};

TEST_P(AttentionTest, MatchesDoubleReference) {
  const AttnCase c = GetParam();
  std::vector<int32_t> starts = {0};
  for (int32_t l : c.lengths) starts.push_back(starts.back() + l);
  const std::size_t total = static_cast<std::size_t>(starts.back());
  // q, k, v packed in one buffer like the fused QKV projection: row stride covers all three.
  const std::size_t qw = c.heads * c.head_dim, kvw = c.kv_heads * c.head_dim;
  const std::size_t ld = qw + 2 * kvw;
  auto packed = random_vector(total * ld, 42, 2.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  std::vector<float> out(total * qw, 9.0f);
  ThreadPool pool(3);
  ops::AttentionArgs args{packed.data(), ld, packed.data() + qw, ld, packed.data() + qw + kvw, ld, out.data(), qw,
                          starts.data(), c.lengths.size(), c.heads, c.kv_heads, c.head_dim, scale, c.mask, c.window};
  if (!c.key_limits.empty()) args.key_limits = c.key_limits.data();
  ops::attention_cpu(args, pool);
  // The reference reads k and v through the same packed layout.
  std::vector<float> kview(packed.begin() + static_cast<std::ptrdiff_t>(qw), packed.end());
  std::vector<float> vview(packed.begin() + static_cast<std::ptrdiff_t>(qw + kvw), packed.end());
  kview.resize(total * ld);
  vview.resize(total * ld);
  auto ref = attention_ref(c, packed, ld, kview, vview, ld, scale);
  EXPECT_LE(max_abs_diff(out, ref), 1e-4 * scale_of(ref));
}

INSTANTIATE_TEST_SUITE_P(
    Ragged, AttentionTest,
    ::testing::Values(AttnCase{{1}, 1, 1, 1, ops::MaskMode::kBidirectional, 0},
                      AttnCase{{7}, 2, 2, 8, ops::MaskMode::kBidirectional, 0},
                      AttnCase{{1, 7, 97}, 4, 4, 32, ops::MaskMode::kBidirectional, 0},
                      AttnCase{{257, 3}, 3, 1, 64, ops::MaskMode::kBidirectional, 0},
                      AttnCase{{97, 1, 33}, 4, 2, 16, ops::MaskMode::kCausal, 0},
                      AttnCase{{97, 40}, 2, 2, 128, ops::MaskMode::kBidirectional, 16},
                      AttnCase{{1, 2, 3, 5, 8, 13, 21}, 6, 3, 7, ops::MaskMode::kCausal, 5},
                      // Key limits (PyLate's masked query expansion): rows past the limit see
                      // only the keys before it; a limit at the length changes nothing.
                      AttnCase{{24, 7, 200}, 4, 2, 16, ops::MaskMode::kCausal, 0, {9, 7, 150}},
                      AttnCase{{33, 5}, 2, 1, 8, ops::MaskMode::kBidirectional, 0, {1, 3}}));

// attention_first_cpu: each sequence's first row alone, written to row s. It runs the same
// arithmetic as the full op's first row (keys past the row's range only add zero products
// there), so the two agree bit for bit; an empty sequence gets zeros.
TEST_P(AttentionTest, FirstRowsOnlyEqualTheFullOpsFirstRows) {
  AttnCase c = GetParam();
  c.lengths.push_back(0);  // an empty sequence among them
  std::rotate(c.lengths.rbegin(), c.lengths.rbegin() + 1, c.lengths.rend());
  std::vector<int32_t> starts = {0};
  for (int32_t l : c.lengths) starts.push_back(starts.back() + l);
  const std::size_t total = static_cast<std::size_t>(starts.back()), seqs = c.lengths.size();
  const std::size_t qw = c.heads * c.head_dim, kvw = c.kv_heads * c.head_dim, ld = qw + 2 * kvw;
  auto packed = random_vector(total * ld, 43, 2.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  std::vector<float> full(total * qw, 9.0f), first(seqs * (qw + 3), 9.0f);
  ThreadPool pool(3);
  ops::AttentionArgs a{packed.data(), ld, packed.data() + qw, ld, packed.data() + qw + kvw, ld, full.data(), qw,
                       starts.data(), seqs, c.heads, c.kv_heads, c.head_dim, scale, c.mask, c.window};
  ops::attention_cpu(a, pool);
  a.out = first.data();
  a.ldo = qw + 3;  // a wider row stride: only the head columns are written
  ops::attention_first_cpu(a, pool);
  for (std::size_t s = 0; s < seqs; ++s) {
    for (std::size_t j = 0; j < qw; ++j) {
      const float want = c.lengths[s] == 0 ? 0.0f : full[static_cast<std::size_t>(starts[s]) * qw + j];
      ASSERT_EQ(first[s * (qw + 3) + j], want) << "sequence " << s << ", column " << j;
    }
    for (std::size_t j = qw; j < qw + 3; ++j) ASSERT_EQ(first[s * (qw + 3) + j], 9.0f) << "wrote past the heads";
  }
}

TEST(Attention, LongSequenceMemoryIsPerRowBlock) {
  // 4k tokens in one sequence: the op must not need a 4k × 4k buffer; this runs in bounded
  // memory and stays finite.
  const std::size_t len = 4096, heads = 2, hd = 32, ld = 3 * heads * hd;
  auto packed = random_vector(len * ld, 7);
  std::vector<int32_t> starts = {0, static_cast<int32_t>(len)};
  std::vector<float> out(len * heads * hd);
  ThreadPool pool(2);
  ops::attention_cpu({packed.data(), ld, packed.data() + heads * hd, ld, packed.data() + 2 * heads * hd, ld,
                      out.data(), heads * hd, starts.data(), 1, heads, heads, hd, 0.17f,
                      ops::MaskMode::kBidirectional, 0},
                     pool);
  for (float x : out) ASSERT_TRUE(std::isfinite(x));
}

TEST(Attention, RejectsBadHeadGrouping) {
  std::vector<float> buf(64);
  std::vector<int32_t> starts = {0, 1};
  ThreadPool pool(1);
  EXPECT_THROW(ops::attention_cpu({buf.data(), 12, buf.data(), 12, buf.data(), 12, buf.data(), 12, starts.data(), 1,
                                   3, 2, 4, 1.0f, ops::MaskMode::kBidirectional, 0},
                                  pool),
               std::exception);
}

}  // namespace
}  // namespace il::test
