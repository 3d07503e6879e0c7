// The CUDA forms of the op changes DiffusionGemma needs, against the CPU ops on random inputs, in
// f32, f16 and bf16 (half inputs are rounded once and the CPU op gets the same rounded values,
// so what is measured is the kernel's own error):
// - row softmax (f32 logits in, any type out; −inf entries, a row of −inf → zeros) and the logit
//   softcap (any type in, f32 out), odd widths, strided rows;
// - the embedding scale; layernorm's sum_scale with and without a residual, through both kernels
//   (warp and block), sum_out included; rope's active_pairs at head_dim 512 (inactive pairs
//   unchanged bit for bit);
// - cached attention over a diffusion canvas: 8 and 37 query rows per sequence reading their
//   cache and the whole canvas, a sliding window smaller than the cache anchored at the canvas's
//   first entry, head_dim 256 and 512, GQA 8/4 and 8/2, sequences of different cache lengths,
//   with and without the split workspace, padding tokens zeroed;
// - the GEMM with a transposed [k, n] weight (cuBLASLt and the fallback; never the skinny or
//   wgmma kernels, which read W along k).
// Tolerances are stated where each is checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "core/error.h"
#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "half_test_util.h"
#include "ops/embed.h"
#include "ops/gemm_cuda.h"
#include "ops/kv_cache.h"
#include "ops/layernorm.h"
#include "ops/logits.h"
#include "ops/ops_cuda.h"
#include "ops/rope.h"
#include "../unit/reference.h"

namespace il::test {
namespace {

using ops::f32_view;

constexpr float kSentinel = 0.75f;

class DgOps : public ::testing::TestWithParam<DType> {
 protected:
  DType type() const { return GetParam(); }
};

// Softmax: per element, |got − want| ≤ r·|want| + a. f32: r = 1e-5 (expf against std::exp, 2 ulp
// each, and the f32 block sum against the CPU's double sum over up to 32,769 terms: well under
// 1e-5); half outputs add one rounding (u) and, for f16, half its subnormal spacing (2⁻²⁵) as a.
TEST_P(DgOps, SoftmaxRowsMatchCpuWithMaskedEntriesAndEmptyRows) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  const double r = 1e-5 + (type() == DType::kF32 ? 0.0 : unit_roundoff(type()));
  const double abs_tol = type() == DType::kF16 ? 0x1p-25 : 0.0;
  uint32_t seed = 300;
  for (std::size_t cols : {1, 7, 1001, 32769})
    for (float scale : {1.0f, 0.5f}) {
      const std::size_t rows = 6, ldx = cols + 3, ldo = cols + 1;
      std::vector<float> x = random_vector(rows * ldx, seed++, 3.0f);
      std::mt19937 rng(seed);
      for (std::size_t i = 0; i < x.size(); ++i)
        if (rng() % 5 == 0) x[i] = -INFINITY;  // masked vocabulary entries
      for (std::size_t j = 0; j < cols; ++j) x[2 * ldx + 1 + j] = -INFINITY;  // row 2: no distribution
      x[4 * ldx + 1] = 0.0f;  // row 4 keeps at least one finite entry
      std::vector<float> want(rows * ldo, kSentinel);
      ops::softmax_rows_cpu({f32_view(x.data() + 1, ldx), f32_view(want.data(), ldo), rows, cols, scale}, pool);
      DeviceArray<float> dx(x);
      TypedArray out(std::vector<float>(rows * ldo, kSentinel), type());
      ops::softmax_rows_cuda({f32_view(dx.get() + 1, ldx), out.view(0, ldo), rows, cols, scale}, nullptr);
      const std::vector<float> got = out.download();
      double worst = 0.0;
      for (std::size_t row = 0; row < rows; ++row)
        for (std::size_t j = 0; j < ldo; ++j) {
          const std::size_t i = row * ldo + j;
          if (j >= cols) {  // past the row: untouched
            ASSERT_EQ(got[i], kSentinel) << "column " << j << " past " << cols;
            continue;
          }
          ASSERT_TRUE(std::isfinite(got[i])) << "row " << row << " col " << j;
          if (row == 2) {
            ASSERT_EQ(got[i], 0.0f) << "a row of −inf must give zeros";
          }
          const double err = std::abs(static_cast<double>(got[i]) - want[i]), allowed = r * std::abs(want[i]) + abs_tol;
          if (allowed > 0) worst = std::max(worst, err / allowed);
          ASSERT_LE(err, allowed)
              << type_name(type()) << " cols " << cols << " row " << row << " col " << j << " want " << want[i];
        }
      std::printf("[softmax %s] cols %zu scale %.1f: worst error %.3g of its tolerance (%.3g relative + %.3g)\n",
                  type_name(type()).c_str(), cols, scale, worst, r, abs_tol);
    }
}

// Softcap: out = cap · tanh(x / cap) in f32 from the same (rounded) inputs: tanhf against std::tanh,
// 2 ulp of an output below cap: 1e-6 of the output's scale (rel_error's, at least 1).
TEST_P(DgOps, SoftcapMatchesCpuIntoF32) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  uint32_t seed = 400;
  for (std::size_t cols : {1, 7, 1001, 4099})
    for (float cap : {30.0f, 2.5f}) {
      const std::size_t rows = 5, ldx = cols + 2, ldo = cols + 5;
      const TypedArray x(random_vector(rows * ldx, seed++, 40.0f), type());  // saturating and small values
      std::vector<float> want(rows * ldo, kSentinel);
      ops::softcap_cpu({f32_view(x.values().data() + 2, ldx), f32_view(want.data(), ldo), rows, cols, cap}, pool);
      DeviceArray<float> out(std::vector<float>(rows * ldo, kSentinel));
      ops::softcap_cuda({x.view(2, ldx), f32_view(out.get(), ldo), rows, cols, cap}, nullptr);
      const double err = rel_error(out.download(), want);
      EXPECT_LE(err, 1e-6) << type_name(type()) << " cols " << cols << " cap " << cap;
      std::printf("[softcap %s] cols %zu cap %.1f: error %.3g (tolerance 1e-6)\n", type_name(type()).c_str(), cols,
                  cap, err);
    }
  if (type() == DType::kF32) {  // in place (out = x, both f32), as the CPU op allows
    const std::size_t rows = 3, cols = 77;
    std::vector<float> x = random_vector(rows * cols, 9, 50.0f), want = x;
    ops::softcap_cpu({f32_view(want.data(), cols), f32_view(want.data(), cols), rows, cols, 30.0f}, pool);
    DeviceArray<float> dx(x);
    ops::softcap_cuda({f32_view(dx.get(), cols), f32_view(dx.get(), cols), rows, cols, 30.0f}, nullptr);
    EXPECT_LE(rel_error(dx.download(), want), 1e-6) << "in place";
  }
}

// Embedding scale: the word row times scale, then position and type rows, in f32, rounded once.
// f32: 1e-6 of the output's scale (a product and sums in the CPU's order; the device may fuse one
// multiply-add); half: one rounding, u, plus that f32 slack (a fused product may round the other
// way).
TEST_P(DgOps, EmbedScaleMatchesCpu) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  const std::size_t cols = 97, ldo = cols + 4, vocab = 50, max_pos = 300;
  const std::vector<int32_t> lengths = {1, 5, 0, 200, 17};
  const auto starts = starts_of(lengths);
  const std::size_t total = static_cast<std::size_t>(starts.back());
  std::vector<int32_t> tokens(total);
  for (std::size_t t = 0; t < total; ++t) tokens[t] = static_cast<int32_t>((t * 7 + 3) % vocab);
  const TypedArray word(random_vector(vocab * cols, 51), type()), pos(random_vector(max_pos * cols, 52), type());
  DeviceArray<int32_t> dtok(tokens), dstarts(starts);
  const double tol = 1e-6 + (type() == DType::kF32 ? 0.0 : unit_roundoff(type()));
  for (bool with_pos : {false, true})
    for (float scale : {1.0f, 39.191836f}) {  // √1536: Gemma's scale for a hidden size of 1536
      std::vector<float> want(total * ldo, kSentinel);
      ops::EmbedArgs c{tokens.data(), nullptr, starts.data(), lengths.size(), f32_view(word.values().data()),
                       f32_view(with_pos ? pos.values().data() : nullptr), 0, {}, f32_view(want.data() + 1, ldo),
                       cols, scale};
      ops::embed_cpu(c, pool);
      const TypedArray out(std::vector<float>(total * ldo, kSentinel), type());
      ops::embed_cuda({dtok.get(), nullptr, dstarts.get(), lengths.size(), word.view(),
                       with_pos ? ops::ConstTensorView(pos.view()) : ops::ConstTensorView{}, 0, {}, out.view(1, ldo),
                       cols, scale},
                      total, nullptr);
      const double err = rel_error(out.download(), want);
      EXPECT_LE(err, tol) << type_name(type()) << " position " << with_pos << " scale " << scale;
      std::printf("[embed scale %s] position %d scale %.3f: error %.3g (tolerance %.3g)\n", type_name(type()).c_str(),
                  with_pos, scale, err, tol);
    }
}

// sum_scale: (x + residual) · s, or x · s, normalised and (with a residual) stored in sum_out.
// Tolerances as ops_glu_rope_norm_parity_test.cc: f32 1e-4 of the output's scale, half 4 u.
TEST_P(DgOps, LayerNormSumScaleMatchesCpuThroughBothKernels) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  const double tol = type() == DType::kF32 ? 1e-4 : 4.0 * unit_roundoff(type());
  uint32_t seed = 500;
  int warp_runs = 0, block_runs = 0;
  // 1024: the warp kernel in every type; 1536: the warp kernel in half types only (f32 rows past
  // 1024 columns take the block kernel alone); 97: not vectorisable, the block kernel alone.
  for (std::size_t cols : {1024, 1536, 97})
    for (std::size_t rows : {1, 7, 97})
      for (bool residual : {false, true})
        for (bool rms : {true, false}) {
          const float s = 0.171875f;  // a Gemma-4 layer scalar's order of magnitude
          const TypedArray x(random_vector(rows * cols, seed++, 2.0f), type());
          const TypedArray res(random_vector(rows * cols, seed++, 2.0f), type());
          const auto w = random_vector(cols, seed++, 0.5f), b = random_vector(cols, seed++, 0.1f);
          std::vector<float> want(rows * cols, kSentinel), want_sum(rows * cols, kSentinel);
          ops::LayerNormArgs c{f32_view(x.values().data(), cols),
                               residual ? f32_view(res.values().data(), cols) : ops::ConstTensorView{},
                               w.data(),
                               rms ? nullptr : b.data(),
                               f32_view(want.data(), cols),
                               rows,
                               cols,
                               1e-6f,
                               rms};
          if (residual) c.sum_out = f32_view(want_sum.data(), cols);
          c.sum_scale = s;
          ops::layernorm_cpu(c, pool);
          DeviceArray<float> dw(w), db(b);
          for (ops::LayerNormKernel k : {ops::LayerNormKernel::kWarp, ops::LayerNormKernel::kBlock}) {
            const TypedArray out(std::vector<float>(rows * cols, kSentinel), type());
            const TypedArray sum(std::vector<float>(rows * cols, kSentinel), type());
            ops::LayerNormArgs a{x.view(0, cols),
                                 residual ? ops::ConstTensorView(res.view(0, cols)) : ops::ConstTensorView{},
                                 dw.get(),
                                 rms ? nullptr : db.get(),
                                 out.view(0, cols),
                                 rows,
                                 cols,
                                 1e-6f,
                                 rms};
            if (residual) a.sum_out = sum.view(0, cols);
            a.sum_scale = s;
            if (!ops::layernorm_kernel_supports(k, a)) {
              ASSERT_EQ(k, ops::LayerNormKernel::kWarp) << "the block kernel takes every layout";
              continue;
            }
            ++(k == ops::LayerNormKernel::kWarp ? warp_runs : block_runs);
            ops::layernorm_launch_cuda(k, a, nullptr);
            const double err = rel_error(out.download(), want);
            EXPECT_LE(err, tol) << type_name(type()) << " " << ops::layernorm_kernel_name(k) << " cols " << cols
                                << " rows " << rows << " residual " << residual << " rms " << rms;
            if (residual) {
              EXPECT_LE(rel_error(sum.download(), want_sum), tol)
                  << "sum_out, " << type_name(type()) << " " << ops::layernorm_kernel_name(k) << " cols " << cols;
            }
          }
        }
  EXPECT_GT(warp_runs, 0);
  EXPECT_GT(block_runs, 0);
  std::printf("[layernorm sum_scale %s] %d warp-kernel and %d block-kernel runs (tolerance %.3g)\n",
              type_name(type()).c_str(), warp_runs, block_runs, tol);
}

// Proportional rope at Gemma-4's global geometry: head_dim 512, rotate-half over all of it, 64
// pairs of 256 turning. The angles are the CPU's table (rope_frequencies); f32 1e-6 of the
// output's scale (as ops_glu_rope_norm_parity_test.cc), half 4 u; the inactive pairs are
// untouched bit for bit.
TEST_P(DgOps, RopeActivePairsAtHeadDim512) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  const double tol = type() == DType::kF32 ? 1e-6 : 4.0 * unit_roundoff(type());
  const std::size_t heads = 3, hd = 512, ld = heads * hd + 8;
  for (std::size_t rows : {7, 97})
    for (std::size_t active : {64, 0}) {
      std::vector<int32_t> positions(rows);
      for (std::size_t r = 0; r < rows; ++r) positions[r] = static_cast<int32_t>((r * 977) % 5000);
      const TypedArray x(random_vector(rows * ld, static_cast<uint32_t>(rows + active), 1.0f), type());
      std::vector<float> want = x.values();
      ops::RopeArgs c{f32_view(want.data(), ld), positions.data(), rows, heads, hd, hd, 1000000.0f, false};
      c.active_pairs = active;
      ops::rope_cpu(c, pool);
      DeviceArray<int32_t> dpos(positions);
      const TypedArray dx(x.values(), type());
      ops::RopeArgs a{dx.view(0, ld), dpos.get(), rows, heads, hd, hd, 1000000.0f, false};
      a.active_pairs = active;
      ops::rope_cuda(a, nullptr);
      const std::vector<float> got = dx.download();
      const double err = rel_error(got, want);
      EXPECT_LE(err, tol) << type_name(type()) << " rows " << rows << " active " << active;
      if (active > 0) {
        for (std::size_t r = 0; r < rows; ++r)
          for (std::size_t h = 0; h < heads; ++h)
            for (std::size_t j = active; j < hd / 2; ++j)
              for (std::size_t d : {j, j + hd / 2}) {
                const std::size_t i = r * ld + h * hd + d;
                ASSERT_EQ(got[i], x.values()[i]) << "inactive pair " << j << " changed (row " << r << ")";
              }
      }
      std::printf("[rope %s] head_dim 512 rows %zu active %zu: error %.3g (tolerance %.3g)\n",
                  type_name(type()).c_str(), rows, active, err, tol);
    }
}

// The GEMM with a [k, n] weight: against a double reference on the same (rounded) values.
// f32: 1e-4 of the output's scale (ops_gemm_norm_parity_test.cc's); half: one rounding of the
// output (u) on top of it. cuBLASLt through CublasLtGemm::run (few and many rows, strided
// windows) and the fallback kernel directly.
TEST_P(DgOps, GemmWithTransposedWeightMatchesReference) {
  IL_REQUIRE_GPU();
  ops::CublasLtGemm gemm;
  const double tol = 1e-4 + (type() == DType::kF32 ? 0.0 : unit_roundoff(type()));
  uint32_t seed = 600;
  struct Shape {
    std::size_t k, n;
  };
  for (const Shape sh : {Shape{262, 48}, Shape{1000, 64}, Shape{7, 3}})
    for (std::size_t m : {1, 8, 37, 256})
      for (bool strided : {false, true}) {
        const std::size_t x_off = strided ? 3 : 0, ldx = strided ? sh.k + 5 : sh.k;
        const std::size_t y_off = strided ? 1 : 0, ldy = strided ? sh.n + 3 : sh.n;
        const TypedArray w(random_vector(sh.k * sh.n, seed++, 0.2f), type());  // [k, n]
        const TypedArray x(random_vector(m * ldx, seed++, 1.0f), type());
        std::vector<float> want(m * ldy, kSentinel);
        for (std::size_t r = 0; r < m; ++r)
          for (std::size_t c = 0; c < sh.n; ++c) {
            double acc = 0.0;
            for (std::size_t i = 0; i < sh.k; ++i)
              acc += static_cast<double>(x.values()[r * ldx + x_off + i]) * w.values()[i * sh.n + c];
            want[r * ldy + y_off + c] = static_cast<float>(acc);
          }
        for (bool fallback : {false, true}) {
          const TypedArray y(std::vector<float>(m * ldy, kSentinel), type());
          ops::GemmCudaArgs a{x.view(x_off, ldx), w.view(0, sh.n), {}, y.view(y_off, ldy), m, sh.n, sh.k};
          a.transpose_w = true;
          EXPECT_FALSE(ops::gemm_kernel_supports(ops::GemmKernel::kSkinny, a));
          EXPECT_FALSE(ops::gemm_kernel_supports(ops::GemmKernel::kWgmma, a));
          if (fallback) {
            ops::gemm_fallback_cuda(a, nullptr);
          } else {
            const ops::GemmKernel k = gemm.kernel_for(a);
            EXPECT_TRUE(k == ops::GemmKernel::kCublasLt || k == ops::GemmKernel::kFallback) << gemm_kernel_name(k);
            gemm.run(a, nullptr);
          }
          const double err = rel_error(y.download(), want);
          EXPECT_LE(err, tol) << type_name(type()) << " m " << m << " k " << sh.k << " n " << sh.n << " strided "
                              << strided << (fallback ? " (fallback)" : " (run)");
        }
      }
  // A weight whose rows are not n wide is refused, naming the layout.
  const TypedArray w(std::vector<float>(12, 0.0f), type()), x(std::vector<float>(4, 0.0f), type()),
      y(std::vector<float>(3, 0.0f), type());
  ops::GemmCudaArgs bad{x.view(0, 4), w.view(0, 4), {}, y.view(0, 3), 1, 3, 4};
  bad.transpose_w = true;
  EXPECT_THROW(gemm.run(bad, nullptr), Error);
}

INSTANTIATE_TEST_SUITE_P(Types, DgOps, ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const ::testing::TestParamInfo<DType>& i) { return type_name(i.param); });

// ---- cached attention over a diffusion canvas ----

struct CanvasShape {
  std::size_t heads, kv_heads, head_dim, canvas, window;
};

class CanvasAttention : public ::testing::TestWithParam<std::tuple<DType, CanvasShape>> {};

// Three sequences with caches of 53, 7 and 300 entries before their canvases (page size 16,
// pages shuffled over the cache); every canvas token reads its sequence's cache and the whole
// canvas (cache length = prefix + canvas), anchored at the canvas's first entry, so with a
// window W it sees the W − 1 entries before the canvas and the canvas; then 3 padding tokens
// (length 0). The window (when set) is smaller than the longest cache and larger than the
// shortest. Tolerance: f32 1e-5 (both sum in f32, in other orders); half: the output's rounding
// (2 u of the largest |value|) plus the f32 slack, as ops_kv_cache_parity_test.cc.
TEST_P(CanvasAttention, WindowedCanvasMatchesCpu) {
  IL_REQUIRE_GPU();
  const auto [type, shape] = GetParam();
  std::mt19937 rng(static_cast<unsigned>(shape.head_dim + shape.canvas * 3 + shape.window));
  const std::size_t P = 16, hd = shape.head_dim, C = shape.canvas;
  const std::vector<std::size_t> prefix = {53, 7, 300};
  std::vector<int32_t> seq_starts = {0}, lengths, anchors, page_starts = {0}, pages;
  std::size_t total_pages = 0;
  for (std::size_t n : prefix) total_pages += (n + C + P - 1) / P;
  std::vector<int32_t> perm(total_pages + 2);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::size_t next = 0;
  for (std::size_t n : prefix) {
    for (std::size_t p = 0; p < (n + C + P - 1) / P; ++p) pages.push_back(perm[next++]);
    page_starts.push_back(static_cast<int32_t>(pages.size()));
    for (std::size_t i = 0; i < C; ++i) {
      lengths.push_back(static_cast<int32_t>(n + C));
      anchors.push_back(static_cast<int32_t>(n));
    }
    seq_starts.push_back(seq_starts.back() + static_cast<int32_t>(C));
  }
  const std::size_t real = lengths.size(), tokens = real + 3;
  for (int i = 0; i < 3; ++i) {
    lengths.push_back(0);
    anchors.push_back(0);
  }
  const std::size_t cache_rows = perm.size() * P, qw = shape.heads * hd, kvw = shape.kv_heads * hd;
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const auto values = [&](std::size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = nd(rng);
    return v;
  };
  // Gemma-4 normalises q and k (attention scale 1): unit-variance entries, scores of order √hd
  // scaled down here to keep the softmax from being one-hot.
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  TypedArray q(values(tokens * qw), type), k(values(cache_rows * kvw), type), v(values(cache_rows * kvw), type);
  ops::CachedAttentionArgs a;
  a.q = q.view(0, qw);
  a.k_cache = k.view(0, kvw);
  a.v_cache = v.view(0, kvw);
  a.page_size = P;
  a.heads = shape.heads;
  a.kv_heads = shape.kv_heads;
  a.head_dim = hd;
  a.scale = scale;
  a.window = shape.window;
  std::vector<float> want(tokens * qw, 0.0f);
  {
    ops::CachedAttentionArgs c = a;
    c.q = f32_view(q.values().data(), qw);
    c.k_cache = f32_view(k.values().data(), kvw);
    c.v_cache = f32_view(v.values().data(), kvw);
    c.out = f32_view(want.data(), qw);
    c.seq_starts = seq_starts.data();
    c.num_seqs = prefix.size();
    c.cache_lengths = lengths.data();
    c.page_starts = page_starts.data();
    c.pages = pages.data();
    c.window_anchors = shape.window > 0 ? anchors.data() : nullptr;
    ThreadPool pool(4);
    ops::cached_attention_cpu(c, pool);
  }
  std::vector<int32_t> dev_starts = seq_starts, dev_page_starts = page_starts;
  dev_starts.push_back(seq_starts.back());  // a padding sequence, empty
  dev_page_starts.push_back(page_starts.back());
  DeviceArray<int32_t> d_starts(dev_starts), d_lengths(lengths), d_anchors(anchors), d_pstarts(dev_page_starts),
      d_pages(pages);
  a.seq_starts = d_starts.get();
  a.num_seqs = prefix.size() + 1;
  a.cache_lengths = d_lengths.get();
  a.page_starts = d_pstarts.get();
  a.pages = d_pages.get();
  a.window_anchors = shape.window > 0 ? d_anchors.get() : nullptr;
  const std::size_t ws_floats = 8192 * (hd + 2);  // the executor's workspace
  DeviceArray<float> workspace(std::vector<float>(ws_floats, 0.0f));
  for (bool split : {false, true}) {
    TypedArray out(std::vector<float>(tokens * qw, 7.0f), type);
    a.out = out.view(0, qw);
    a.workspace = split ? workspace.get() : nullptr;
    a.workspace_floats = split ? ws_floats : 0;
    const std::size_t splits = split ? ops::cached_attention_splits(tokens, a.heads, a.kv_heads, hd, ws_floats) : 1;
    ops::cached_attention_cuda(a, tokens, nullptr);
    IL_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> got = out.download();
    double worst = 0, mag = 0;
    for (std::size_t i = 0; i < real * qw; ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << "element " << i;
      worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
      mag = std::max(mag, std::abs(static_cast<double>(want[i])));
    }
    const double tol = type == DType::kF32 ? 1e-5 : 2.0 * unit_roundoff(type) * mag + 1e-5;
    std::printf("[canvas attention %s heads %zu/%zu hd %zu canvas %zu window %zu, %zu split(s)] max-abs %.3g "
                "(tolerance %.3g)\n",
                type_name(type).c_str(), shape.heads, shape.kv_heads, hd, C, shape.window, splits, worst, tol);
    EXPECT_LE(worst, tol);
    for (std::size_t t = real; t < tokens; ++t)
      for (std::size_t j = 0; j < qw; ++j) ASSERT_EQ(got[t * qw + j], 0.0f) << "padding token " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Canvas, CanvasAttention,
    ::testing::Combine(::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                       ::testing::Values(CanvasShape{8, 4, 256, 8, 64}, CanvasShape{8, 2, 512, 37, 0},
                                         CanvasShape{8, 2, 256, 37, 100}, CanvasShape{8, 4, 512, 8, 0},
                                         CanvasShape{8, 2, 512, 8, 20})));

}  // namespace
}  // namespace il::test
