// Rotary embeddings on the CPU against a double-precision reference written from the two pairings'
// definitions: rotate-half (NeoX: x[j] with x[j + r/2]) and interleaved (GPT-J, nomic-bert's
// rotary_emb_interleaved: x[2j] with x[2j + 1]), over whole heads and a partial rotary width, with
// the columns past rotary_dim untouched.
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "core/error.h"
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

std::vector<float> reference_rope(const std::vector<float>& x, const std::vector<int32_t>& pos, std::size_t ld,
                                  std::size_t heads, std::size_t hd, std::size_t rdim, double theta) {
  return reference(x, pos, ld, heads, hd, rdim, theta, false);
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

// Multi-axis rope, worked by hand on one head of 4 columns. Vision form (rotate-half, sections
// (1, 1) restarting, freq_dim 2 → inv_freq 1 in both groups): token at (h = 1, w = 2) turns pair
// (x0, x2) by 1 rad and pair (x1, x3) by 2 rad; x = (1, 1, 0, 0) → (cos 1, cos 2, sin 1, sin 2).
// Text form (interleaved, sections (1, 1) not restarting, freq_dim 4, theta 100 → inv_freq 1 and
// 0.1): token at (t = 3, h = 5) turns (x0, x1) by 3 rad and (x2, x3) by 0.5 rad;
// x = (1, 0, 1, 0) → (cos 3, sin 3, cos 0.5, sin 0.5).
TEST(Rope, MultiAxisSectionsMatchHandComputedRotations) {
  ThreadPool pool(1);
  const std::array<int, 2> sections{1, 1};
  {
    std::vector<float> x{1, 1, 0, 0};
    const std::vector<int32_t> pos{1, 2};  // axis-major, one token: h then w
    ops::RopeArgs a{ops::f32_view(x.data(), 4), pos.data(), 1, 1, 4, 4, 10000.0f};
    a.sections = sections;
    a.sections_restart = true;
    a.freq_dim = 2;
    a.axis_stride = 1;
    ops::rope_cpu(a, pool);
    const std::vector<double> want{std::cos(1.0), std::cos(2.0), std::sin(1.0), std::sin(2.0)};
    for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(x[i], want[i], 1e-6) << "vision form, column " << i;
  }
  {
    std::vector<float> x{1, 0, 1, 0};
    const std::vector<int32_t> pos{3, 5};  // axis-major, one token: t then h
    ops::RopeArgs a{ops::f32_view(x.data(), 4), pos.data(), 1, 1, 4, 4, 100.0f, true};
    a.sections = sections;
    a.freq_dim = 4;
    a.axis_stride = 1;
    ops::rope_cpu(a, pool);
    const std::vector<double> want{std::cos(3.0), std::sin(3.0), std::cos(0.5), std::sin(0.5)};
    for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(x[i], want[i], 1e-6) << "text form, column " << i;
  }
}

// Both of GLM-OCR's configurations at full size against a double-precision reference that builds
// the cos / sin tables the way transformers does: the text decoder (GlmOcrTextRotaryEmbedding:
// 32 inv_freqs over dim 64, freqs per axis, apply_mrope takes chunk i of sections (8, 12, 12) from
// axis i % 3, emb = cat(freqs, freqs), then apply_rotary_pos_emb's cos[..., :32].repeat_interleave(2)
// with rotate_half_llm on the first 64 of 128 columns) and the vision tower
// (GlmOcrVisionRotaryEmbedding(32): 16 inv_freqs, emb = cat(h·inv, w·inv), cat(emb, emb), rotate_half
// over all 64 columns).
struct TableRope {
  std::vector<double> cos, sin;  // [rows, rotary_dim], one value per column
};

TableRope glm_text_tables(const std::vector<int32_t>& pos, std::size_t rows, double theta) {
  const std::size_t dim = 64, nf = dim / 2;
  const std::array<std::size_t, 3> sec{8, 12, 12};
  TableRope t{std::vector<double>(rows * dim), std::vector<double>(rows * dim)};
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<double> freqs(nf);
    std::size_t j = 0;
    for (std::size_t i = 0; i < sec.size(); ++i)
      for (std::size_t k = 0; k < sec[i]; ++k, ++j)
        freqs[j] = pos[(i % 3) * rows + r] * std::pow(theta, -static_cast<double>(2 * j) / dim);
    std::vector<double> emb(2 * nf);  // cat(freqs, freqs)
    for (std::size_t c = 0; c < nf; ++c) emb[c] = emb[c + nf] = freqs[c];
    for (std::size_t c = 0; c < dim; ++c) {  // emb[..., :dim / 2].repeat_interleave(2)
      t.cos[r * dim + c] = std::cos(emb[c / 2]);
      t.sin[r * dim + c] = std::sin(emb[c / 2]);
    }
  }
  return t;
}

TableRope glm_vision_tables(const std::vector<int32_t>& pos, std::size_t rows, double theta) {
  const std::size_t dim = 64, nf = 16;
  TableRope t{std::vector<double>(rows * dim), std::vector<double>(rows * dim)};
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<double> rot(2 * nf);  // (h · inv_freq, w · inv_freq)
    for (std::size_t i = 0; i < nf; ++i) {
      const double inv = std::pow(theta, -static_cast<double>(2 * i) / 32.0);
      rot[i] = pos[r] * inv;
      rot[nf + i] = pos[rows + r] * inv;
    }
    for (std::size_t c = 0; c < dim; ++c) {  // cat(rot, rot)
      t.cos[r * dim + c] = std::cos(rot[c % (2 * nf)]);
      t.sin[r * dim + c] = std::sin(rot[c % (2 * nf)]);
    }
  }
  return t;
}

// q · cos + rotate(q) · sin on each head's first rotary_dim columns; rotate is rotate_half_llm
// (pairs (2j, 2j + 1) → (−x[2j + 1], x[2j])) or rotate_half (halves → (−x2, x1)).
std::vector<float> apply_tables(const std::vector<float>& x, const TableRope& t, std::size_t rows, std::size_t ld,
                                std::size_t heads, std::size_t hd, std::size_t rdim, bool llm_pairs) {
  std::vector<float> out = x;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t h = 0; h < heads; ++h) {
      const float* q = x.data() + r * ld + h * hd;
      for (std::size_t c = 0; c < rdim; ++c) {
        double rotated = 0;
        if (llm_pairs) rotated = c % 2 == 0 ? -q[c + 1] : q[c - 1];
        else rotated = c < rdim / 2 ? -q[c + rdim / 2] : q[c - rdim / 2];
        out[r * ld + h * hd + c] = static_cast<float>(q[c] * t.cos[r * rdim + c] + rotated * t.sin[r * rdim + c]);
      }
    }
  return out;
}

TEST(Rope, GlmTextMropeAndVision2dMatchTransformersTables) {
  ThreadPool pool(2);
  const std::size_t rows = 29;
  for (const bool text : {true, false}) {
    const std::size_t heads = 3, hd = text ? 128 : 64, rdim = 64, ld = heads * hd + 3, axes = text ? 3 : 2;
    std::vector<int32_t> pos(axes * rows);  // distinct values on every axis, so a swap shows
    for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>((i * 53 + i / rows * 17) % 211);
    const std::vector<float> x = random_vector(rows * ld, text ? 5 : 6, 2.0f);
    std::vector<float> got = x;
    const std::vector<int> text_sections{8, 12, 12}, vision_sections{16, 16};
    ops::RopeArgs a{ops::f32_view(got.data(), ld), pos.data(), rows, heads, hd, rdim, 10000.0f, text};
    a.sections = text ? text_sections : vision_sections;
    a.sections_restart = !text;
    a.freq_dim = text ? 64 : 32;
    a.axis_stride = rows;
    ops::rope_cpu(a, pool);
    const TableRope t = text ? glm_text_tables(pos, rows, 10000.0) : glm_vision_tables(pos, rows, 10000.0);
    const std::vector<float> want = apply_tables(x, t, rows, ld, heads, hd, rdim, text);
    double err = 0;
    for (std::size_t i = 0; i < got.size(); ++i) err = std::max(err, std::abs(static_cast<double>(got[i]) - want[i]));
    // f32 angles (position · inv_freq rounded) against double ones: a few ulps of angles < 211.
    EXPECT_LE(err, 1e-4) << (text ? "text M-RoPE" : "vision 2-D rope");
    // Reading the axes swapped (h ↔ w, or t ↔ h) must be visibly wrong: the test can fail.
    std::vector<int32_t> swapped = pos;
    std::swap_ranges(swapped.begin(), swapped.begin() + rows, swapped.begin() + rows);
    const TableRope ts = text ? glm_text_tables(swapped, rows, 10000.0) : glm_vision_tables(swapped, rows, 10000.0);
    const std::vector<float> other = apply_tables(x, ts, rows, ld, heads, hd, rdim, text);
    double gap = 0;
    for (std::size_t i = 0; i < got.size(); ++i) gap = std::max(gap, std::abs(static_cast<double>(got[i]) - other[i]));
    EXPECT_GT(gap, 1e-2);
  }
}

// The fused q / k norms (RopeArgs::norm_first / norm_rest): every head RMS-normalised over its
// head_dim columns with the queries' weight (heads below norm_split) or the keys', then rotated,
// against a double-precision reference of Qwen3's q_norm → k_norm → rotary. The same inputs with
// the two weights swapped must come out visibly different (the split is honoured), and the
// arguments are checked.
TEST(Rope, HeadNormBeforeTheRotationMatchesNormThenRope) {
  ThreadPool pool(2);
  const std::size_t rows = 23, q_heads = 4, k_heads = 2, hd = 24, heads = q_heads + k_heads;
  const std::size_t ld = (heads + k_heads) * hd + 3;  // q | k | v of a fused QKV row, plus 3 columns
  const float eps = 1e-6f, theta = 1e6f;
  std::vector<int32_t> pos(rows);
  for (std::size_t r = 0; r < rows; ++r) pos[r] = static_cast<int32_t>((r * 131) % 500);
  const std::vector<float> x = random_vector(rows * ld, 77, 3.0f);
  std::vector<float> wq = random_vector(hd, 78, 0.5f), wk = random_vector(hd, 79, 0.5f);
  for (float& v : wq) v += 1.0f;
  for (float& v : wk) v += 1.0f;

  const auto reference = [&](const std::vector<float>& first, const std::vector<float>& rest) {
    std::vector<float> normed = x;
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t h = 0; h < heads; ++h) {
        float* head = normed.data() + r * ld + h * hd;
        double sq = 0;
        for (std::size_t j = 0; j < hd; ++j) sq += static_cast<double>(head[j]) * head[j];
        const double inv = 1.0 / std::sqrt(sq / hd + eps);
        const std::vector<float>& w = h < q_heads ? first : rest;
        for (std::size_t j = 0; j < hd; ++j) head[j] = static_cast<float>(head[j] * inv * w[j]);
      }
    return reference_rope(normed, pos, ld, heads, hd, hd, theta);
  };
  std::vector<float> got = x;
  ops::RopeArgs a{ops::f32_view(got.data(), ld), pos.data(), rows, heads, hd, hd, theta};
  a.norm_first = wq.data();
  a.norm_rest = wk.data();
  a.norm_split = q_heads;
  a.norm_eps = eps;
  ops::rope_cpu(a, pool);
  const std::vector<float> want = reference(wq, wk), swapped = reference(wk, wq);
  double err = 0, gap = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::abs(static_cast<double>(got[i]) - want[i]));
    gap = std::max(gap, std::abs(static_cast<double>(got[i]) - swapped[i]));
  }
  EXPECT_LE(err, 2e-4);  // f32 angles against double ones, as above
  EXPECT_GT(gap, 1e-2) << "the keys' weight was not told apart from the queries'";
  for (std::size_t r = 0; r < rows; ++r)  // v and the columns past it are untouched
    for (std::size_t col = heads * hd; col < ld; ++col) ASSERT_EQ(got[r * ld + col], x[r * ld + col]);

  a.norm_rest = nullptr;  // heads from the split on would have no weight
  EXPECT_THROW(ops::check_rope(a), Error);
  a.norm_split = heads;  // every head is a query head: one weight is enough
  EXPECT_NO_THROW(ops::check_rope(a));
  a.norm_split = heads + 1;
  EXPECT_THROW(ops::check_rope(a), Error);
}

TEST(Rope, MultiAxisArgumentsAreChecked) {
  std::vector<float> x(64, 0.0f);
  const std::vector<int32_t> pos(8, 0);
  const std::vector<int> bad_sum{8, 7}, good{8, 8}, zero{16, 0};
  ops::RopeArgs a{ops::f32_view(x.data(), 32), pos.data(), 2, 1, 32, 32, 10000.0f};
  a.axis_stride = 2;
  a.sections = bad_sum;
  EXPECT_THROW(ops::check_rope(a), Error);
  a.sections = zero;
  EXPECT_THROW(ops::check_rope(a), Error);
  a.sections = good;
  EXPECT_NO_THROW(ops::check_rope(a));
  a.axis_stride = 1;  // shorter than the rows: axes would overlap
  EXPECT_THROW(ops::check_rope(a), Error);
  a.axis_stride = 2;
  a.sections_restart = false;
  a.freq_dim = 16;  // 16 global indices need freq_dim ≥ 32
  EXPECT_THROW(ops::check_rope(a), Error);
  a.sections_restart = true;  // 8 indices per group fit freq_dim 16
  EXPECT_NO_THROW(ops::check_rope(a));
}

}  // namespace
}  // namespace il::test
