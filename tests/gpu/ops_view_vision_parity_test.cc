// DeepSeek-OCR-2's vision ops on CUDA against the CPU ops, random inputs rounded once to the type
// (the CPU reference computes in f32 on exactly the values the device holds), f32, f16 and bf16:
// - gather_rows_cuda vs gather_rows_cpu (ops/gather_rows.h): odd column counts, row strides past
//   the row, 1 to 9 parts, −1 (zero) parts, an index list with repeats; a copy, so the result is
//   exact in every type (the columns past the parts are checked untouched).
// - sam_attention_cuda vs sam_attention_cpu (ops/sam_attention.h): several views of different
//   sides in one call (and an empty one), windowed with padding (window 4 over sides 11, 8, 3;
//   window 5 over sides 16, 5, 7) and global (sides 9, 12, 9, each with the tables of its side),
//   2 heads of 64 and 1 head of 32, qkv rows with a stride past the row. Tolerance (relative to
//   max(1, the largest output)): f32 1e-4; f16 / bf16 1e-4 + 2 unit roundoffs of the type (the
//   output's one rounding; the inputs are the same values on both sides).
// - attention_dispatch_cuda with causal_prefix vs attention_cpu (ops/attention.h): prefixes of 0,
//   under, equal to and past the sequence length, an empty sequence, causal with and without a
//   window, GQA; the dispatch must pick the flash kernel. Tolerance as the key-limit test's: 2e-6
//   of the output's scale, plus 2 unit roundoffs for f16 / bf16.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "half_test_util.h"
#include "ops/attention.h"
#include "ops/attention_dispatch_cuda.h"
#include "ops/gather_rows.h"
#include "ops/ops_cuda.h"
#include "ops/sam_attention.h"
#include "../unit/reference.h"

namespace il::test {
namespace {

class VisionOps : public ::testing::TestWithParam<DType> {
 protected:
  DType type() const { return GetParam(); }
};

// ---------------------------------------------------------------------------------------------
// Row gathers

TEST_P(VisionOps, GatherRowsMatchesCpu) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  struct Case {
    std::size_t src_rows, rows, taps, cols, src_pad, out_pad;
  };
  uint32_t seed = 5;
  for (const Case& c : {Case{37, 29, 9, 53, 7, 3}, Case{5, 11, 1, 3, 0, 0}, Case{64, 130, 4, 96, 0, 5},
                        Case{1, 3, 2, 1, 1, 1}}) {
    const std::size_t lds = c.cols + c.src_pad, ldo = c.taps * c.cols + c.out_pad;
    const TypedArray src(random_vector(c.src_rows * lds, seed++, 2.0f), type());
    std::mt19937 rng(seed++);
    std::uniform_int_distribution<int32_t> pick(-1, static_cast<int32_t>(c.src_rows) - 1);
    std::vector<int32_t> index(c.rows * c.taps);
    for (int32_t& i : index) i = rng() % 4 == 0 ? -1 : pick(rng);
    const std::vector<float> init(c.rows * ldo, 0.5f);
    const TypedArray out(init, type());
    const DeviceArray<int32_t> dindex(index);
    ops::GatherRowsArgs g;
    g.src = src.view(0, lds);
    g.out = out.view(0, ldo);
    g.rows = c.rows;
    g.taps = c.taps;
    g.cols = c.cols;
    ops::gather_rows_cuda(g, dindex.get(), nullptr);
    std::vector<float> want(init);
    ops::gather_rows_cpu({ops::f32_view(src.values().data(), lds), ops::f32_view(want.data(), ldo), index.data(),
                          c.rows, c.taps, c.cols},
                         pool);
    const std::vector<float> got = out.download();
    ASSERT_EQ(got.size(), want.size());
    std::size_t bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i) bad += got[i] != want[i];
    EXPECT_EQ(bad, 0u) << type_name(type()) << " " << c.rows << " rows of " << c.taps << " parts of " << c.cols;
  }
}

// DeBERTa-v2's convolution window over each sequence (sequence_window_cuda): ragged sequences
// with an empty and a one-token one, launch-padding rows past the tokens, 1 / 3 / 5 taps; a copy,
// exact in every type.
TEST_P(VisionOps, SequenceWindowMatchesCpu) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  const std::vector<int32_t> starts{0, 6, 7, 7, 140, 141};
  const std::size_t rows = 160, cols = 67, ldx = 70;
  const DeviceArray<int32_t> dstarts(starts);
  uint32_t seed = 40;
  for (const std::size_t taps : {1, 3, 5}) {
    const std::size_t ldo = taps * cols + 3;
    const TypedArray x(random_vector(rows * ldx, seed++, 2.0f), type());
    const std::vector<float> init(rows * ldo, 0.5f);
    const TypedArray out(init, type());
    ops::sequence_window_cuda({x.view(0, ldx), out.view(0, ldo), dstarts.get(), starts.size() - 1, rows, taps, cols},
                              nullptr);
    std::vector<float> want(init);
    ops::sequence_window_cpu({ops::f32_view(x.values().data(), ldx), ops::f32_view(want.data(), ldo), starts.data(),
                              starts.size() - 1, rows, taps, cols},
                             pool);
    const std::vector<float> got = out.download();
    std::size_t bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i) bad += got[i] != want[i];
    EXPECT_EQ(bad, 0u) << type_name(type()) << " taps " << taps;
  }
}

// ---------------------------------------------------------------------------------------------
// SAM attention (head dim 64 on the tiled kernel, global and windowed; 32 on the per-query one)

struct SamCase {
  std::size_t window;
  std::vector<std::size_t> sides;  // per view (0: an empty view)
  std::size_t heads, head_dim;
};

TEST_P(VisionOps, SamAttentionMatchesCpu) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  const double tol = 1e-4 + (type() == DType::kF32 ? 0.0 : 2.0 * unit_roundoff(type()));
  const std::vector<SamCase> cases = {
      {4, {11, 8, 0, 3}, 2, 64}, {4, {11, 8, 0, 3}, 1, 32}, {5, {16, 5, 7}, 2, 64},
      {5, {16, 5, 7}, 1, 32},    {0, {9, 12, 9}, 2, 64},    {0, {12, 0, 9}, 1, 32},
      {0, {24, 17, 0, 3}, 3, 64},  // the tiled global kernel: several query and key tiles, partial ones
      {14, {30, 14, 9, 0, 16}, 2, 64},  // SAM's window on the tiled kernel: 196 positions, 4 query tiles
      {14, {30, 16}, 1, 32},            // the same on the per-query kernel
  };
  uint32_t seed = 100;
  double worst = 0.0;
  for (const SamCase& c : cases) {
    const std::size_t W = c.heads * c.head_dim, ld_qkv = 3 * W + 5, ldo = W + 3;
    std::vector<int32_t> lengths;
    for (std::size_t g : c.sides) lengths.push_back(static_cast<int32_t>(g * g));
    const std::vector<int32_t> starts = starts_of(lengths);
    const std::size_t tokens = static_cast<std::size_t>(starts.back()), rows = tokens + 2;
    const TypedArray qkv(random_vector(rows * ld_qkv, seed++, 1.0f), type());
    const std::vector<float> bias = random_vector(3 * W, seed++, 0.5f);
    // One pair of tables per side a view meets: the window's, or each distinct view side.
    std::vector<std::size_t> table_sides;
    if (c.window) {
      table_sides.push_back(c.window);
    } else {
      for (std::size_t g : c.sides)
        if (g && std::find(table_sides.begin(), table_sides.end(), g) == table_sides.end()) table_sides.push_back(g);
    }
    std::vector<std::vector<float>> th, tw;
    for (std::size_t S : table_sides) {
      th.push_back(random_vector((2 * S - 1) * c.head_dim, seed++, 0.15f));
      tw.push_back(random_vector((2 * S - 1) * c.head_dim, seed++, 0.15f));
    }
    // CPU: per-view table pointers.
    std::vector<const float*> rel_h(c.sides.size(), th[0].data()), rel_w(c.sides.size(), tw[0].data());
    for (std::size_t v = 0; v < c.sides.size(); ++v) {
      if (!c.sides[v]) continue;
      const std::size_t S = c.window ? c.window : c.sides[v];
      const std::size_t t = static_cast<std::size_t>(
          std::find(table_sides.begin(), table_sides.end(), S) - table_sides.begin());
      rel_h[v] = th[t].data();
      rel_w[v] = tw[t].data();
    }
    const std::vector<float> init(rows * ldo, 0.25f);
    std::vector<float> want(init);
    ops::SamAttentionArgs a;
    a.qkv = qkv.values().data();
    a.ld_qkv = ld_qkv;
    a.qkv_bias = bias.data();
    a.out = want.data();
    a.ldo = ldo;
    a.view_starts = starts.data();
    a.views = c.sides.size();
    a.heads = c.heads;
    a.head_dim = c.head_dim;
    a.window = c.window;
    a.rel_h = rel_h.data();
    a.rel_w = rel_w.data();
    a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    ops::sam_attention_cpu(a, pool);

    const TypedArray out(init, type());
    const DeviceArray<float> dbias(bias);
    const DeviceArray<int32_t> dstarts(starts);
    std::vector<std::unique_ptr<DeviceArray<float>>> dtables;
    ops::SamAttentionCudaArgs g;
    for (std::size_t t = 0; t < table_sides.size(); ++t) {
      dtables.push_back(std::make_unique<DeviceArray<float>>(th[t]));
      dtables.push_back(std::make_unique<DeviceArray<float>>(tw[t]));
      g.tables[t] = {table_sides[t], dtables[2 * t]->get(), dtables[2 * t + 1]->get()};
    }
    g.num_tables = table_sides.size();
    g.qkv = qkv.view(0, ld_qkv);
    g.qkv_bias = dbias.get();
    g.out = out.view(0, ldo);
    g.view_starts = dstarts.get();
    g.views = c.sides.size();
    g.max_view_tokens = longest(lengths);
    g.heads = c.heads;
    g.head_dim = c.head_dim;
    g.window = c.window;
    g.scale = a.scale;
    ops::sam_attention_cuda(g, nullptr);
    IL_CUDA_CHECK(cudaDeviceSynchronize());
    const double err = rel_error(out.download(), want);
    worst = std::max(worst, err);
    EXPECT_LE(err, tol) << type_name(type()) << " window " << c.window << ", " << c.heads << " heads of "
                        << c.head_dim;
  }
  std::printf("[sam attention] %s: worst %.3g (tolerance %.3g)\n", type_name(type()).c_str(), worst, tol);
}

// ---------------------------------------------------------------------------------------------
// Prefix-causal attention

TEST_P(VisionOps, CausalPrefixAttentionMatchesCpu) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  const double tol = 2e-6 + (type() == DType::kF32 ? 0.0 : 2.0 * unit_roundoff(type()));
  const std::vector<int32_t> lengths = {7, 0, 40, 33, 100, 300, 70};
  const std::vector<int32_t> prefix = {0, 5, 17, 33, 150, 200, 70};  // 0, <, =, > the length
  const auto starts = starts_of(lengths);
  const std::size_t total = static_cast<std::size_t>(starts.back());
  const DeviceArray<int32_t> dstarts(starts), dprefix(prefix);
  uint32_t seed = 300;
  double worst = 0.0;
  for (const std::size_t window : {std::size_t{0}, std::size_t{16}})
    for (const std::size_t head_dim : {std::size_t{24}, std::size_t{64}}) {
      const std::size_t heads = 4, kv_heads = 2, qw = heads * head_dim, kvw = kv_heads * head_dim;
      const std::size_t ld = qw + 2 * kvw;
      const TypedArray in(random_vector(total * ld, seed++, 1.5f), type());
      const TypedArray out(std::vector<float>(total * qw, 0.5f), type());
      ops::AttentionCudaArgs a;
      const std::size_t es = dtype_size(type());
      a.q = in.get();
      a.k = static_cast<const uint8_t*>(in.get()) + qw * es;
      a.v = static_cast<const uint8_t*>(in.get()) + (qw + kvw) * es;
      a.ldq = a.ldk = a.ldv = ld;
      a.out = out.get();
      a.ldo = qw;
      a.seq_starts = dstarts.get();
      a.num_seqs = lengths.size();
      a.heads = heads;
      a.kv_heads = kv_heads;
      a.head_dim = head_dim;
      a.scale = 0.2f;
      a.mask = ops::MaskMode::kCausal;
      a.window = window;
      a.type = type();
      a.max_seq_len = longest(lengths);
      a.rows = total;
      a.causal_prefix = dprefix.get();
      EXPECT_EQ(ops::choose_attention_kernel(a), ops::AttentionKernel::kFlash);
      ops::attention_dispatch_cuda(a, nullptr);
      std::vector<float> want(total * qw, 0.0f);
      const float* x = in.values().data();
      ops::AttentionArgs c{x,     ld,       x + qw,   ld,   x + qw + kvw, ld, want.data(), qw, starts.data(),
                           lengths.size(), heads, kv_heads, head_dim, 0.2f, ops::MaskMode::kCausal, window};
      c.causal_prefix = prefix.data();
      ops::attention_cpu(c, pool);
      const double err = rel_error(out.download(), want);
      worst = std::max(worst, err);
      EXPECT_LE(err, tol) << type_name(type()) << " window " << window << " head_dim " << head_dim;
    }
  std::printf("[causal prefix] attention %s: worst %.3g (tolerance %.3g)\n", type_name(type()).c_str(), worst, tol);
}

INSTANTIATE_TEST_SUITE_P(Types, VisionOps, ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return type_name(info.param); });

}  // namespace
}  // namespace il::test
