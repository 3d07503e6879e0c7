// The KV cache ops on CUDA against the CPU ops (ops/kv_cache.h), random inputs, in f32, f16 and
// bf16 (the CPU reference gets exactly the values the device arrays hold):
// - cached attention: ragged sequences whose cache pages are shuffled over the cache, several
//   tokens per sequence reading different lengths (a prefill-like batch and decode-like single
//   tokens), GQA, head dims 40 / 64 / 128 / 256 (one to eight values per lane), padding tokens of
//   cache length 0 written as zeros. Tolerance: f32 1e-5 (both sum in f32, in other orders);
//   half types: the output's rounding (2 u of the largest |value|) plus the f32 sum's slack.
// - cached attention at GLM-OCR's decode geometry (16 query heads on 8 KV heads of 128, page
//   sizes 64 and 16, caches of 1,811 to about 2,000 entries), one decode token per sequence, batch
//   1 (entries split over many blocks) and 64 (a few splits) plus padding tokens: the grouped kernel
//   that reads each K / V row once per KV group. Same tolerances.
// - kv_write and inject_rows: exact copies (the same bits), padding rows (index -1) untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "half_test_util.h"
#include "ops/kv_cache.h"
#include "ops/ops_cuda.h"

namespace il::test {
namespace {

std::vector<float> random_values(std::size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

struct Shape {
  std::size_t heads, kv_heads, head_dim, page_size;
};

class CachedAttentionParity : public ::testing::TestWithParam<std::tuple<DType, Shape>> {};

TEST_P(CachedAttentionParity, MatchesCpu) {
  IL_REQUIRE_GPU();
  const auto [type, shape] = GetParam();
  std::mt19937 rng(static_cast<unsigned>(shape.head_dim * 7 + shape.heads));
  const std::size_t P = shape.page_size, hd = shape.head_dim;
  // Three sequences: cache lengths 37, 5 and 130; the first has 3 query tokens (reading 35, 36,
  // 37 entries), the others one each, then 2 padding tokens (length 0).
  const std::vector<int32_t> seq_starts = {0, 3, 4, 5};
  const std::vector<int32_t> lengths = {35, 36, 37, 5, 130, 0, 0};
  const std::vector<std::size_t> seq_len = {37, 5, 130};
  std::vector<int32_t> page_starts = {0}, pages;
  std::size_t total_pages = 0;
  for (std::size_t n : seq_len) total_pages += (n + P - 1) / P;
  std::vector<int32_t> perm(total_pages + 3);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::size_t next = 0;
  for (std::size_t n : seq_len) {
    for (std::size_t p = 0; p < (n + P - 1) / P; ++p) pages.push_back(perm[next++]);
    page_starts.push_back(static_cast<int32_t>(pages.size()));
  }
  const std::size_t cache_rows = perm.size() * P, tokens = lengths.size();
  const std::size_t qw = shape.heads * hd, kvw = shape.kv_heads * hd;
  TypedArray q(random_values(tokens * qw, rng, 1.0f), type);
  TypedArray k(random_values(cache_rows * kvw, rng, 1.0f), type);
  TypedArray v(random_values(cache_rows * kvw, rng, 1.0f), type);
  TypedArray out(std::vector<float>(tokens * qw, 7.0f), type);
  ops::CachedAttentionArgs a;
  a.q = q.view(0, qw);
  a.k_cache = k.view(0, kvw);
  a.v_cache = v.view(0, kvw);
  a.out = out.view(0, qw);
  a.num_seqs = 3;
  a.page_size = P;
  a.heads = shape.heads;
  a.kv_heads = shape.kv_heads;
  a.head_dim = hd;
  a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // CPU on the values the device holds, over the real tokens.
  std::vector<float> want(tokens * qw, 0.0f);
  {
    ops::CachedAttentionArgs c = a;
    c.q = ops::f32_view(q.values().data(), qw);
    c.k_cache = ops::f32_view(k.values().data(), kvw);
    c.v_cache = ops::f32_view(v.values().data(), kvw);
    c.out = ops::f32_view(want.data(), qw);
    c.seq_starts = seq_starts.data();
    c.cache_lengths = lengths.data();
    c.page_starts = page_starts.data();
    c.pages = pages.data();
    ThreadPool pool(2);
    ops::cached_attention_cpu(c, pool);
  }
  // The device launch over every token, padding included (bucketed sequences: the padding
  // tokens belong to no real sequence: seq_starts ends at the real count for them).
  const std::vector<int32_t> dev_starts = {0, 3, 4, 5, 5};
  std::vector<int32_t> dev_page_starts = page_starts;
  dev_page_starts.push_back(page_starts.back());
  DeviceArray<int32_t> d_starts(dev_starts), d_lengths(lengths), d_pstarts(dev_page_starts), d_pages(pages);
  a.seq_starts = d_starts.get();
  a.num_seqs = 4;
  a.cache_lengths = d_lengths.get();
  a.page_starts = d_pstarts.get();
  a.pages = d_pages.get();
  // Twice: one block per token and head, then the entries split over blocks and merged (the
  // workspace the executor passes), each against the CPU.
  DeviceArray<float> workspace(std::vector<float>(1024 * (hd + 2), 0.0f));
  for (bool split : {false, true}) {
    a.workspace = split ? workspace.get() : nullptr;
    a.workspace_floats = split ? 1024 * (hd + 2) : 0;
    const std::size_t splits =
        split ? ops::cached_attention_splits(tokens, a.heads, a.kv_heads, hd, a.workspace_floats) : 1;
    if (split) {
      EXPECT_GT(splits, 1u);
    }
    ops::cached_attention_cuda(a, tokens, nullptr);
    IL_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> got = out.download();
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
      scale = std::max(scale, std::abs(static_cast<double>(want[i])));
    }
    const double tol = type == DType::kF32 ? 1e-5 : 2.0 * unit_roundoff(type) * scale + 1e-5;
    std::printf("[cached attention %s hd %zu, %zu split(s)] max-abs %.3g (tolerance %.3g)\n", type_name(type).c_str(),
                hd, splits, worst, tol);
    EXPECT_LE(worst, tol);
    for (std::size_t t = 5; t < tokens; ++t)
      for (std::size_t j = 0; j < qw; ++j) EXPECT_EQ(got[t * qw + j], 0.0f) << "padding token " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CachedAttentionParity,
    ::testing::Combine(::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                       ::testing::Values(Shape{4, 2, 40, 4}, Shape{16, 8, 128, 64}, Shape{6, 6, 64, 16},
                                         Shape{2, 1, 256, 7})));

// GLM-OCR's decode step: one query token per sequence reading its whole cache. The sequences'
// page lists are shuffled draws from one pool of pages (sequences may share pages, as a prefix
// cache would), which keeps the cache small while every sequence reads its own page order.
struct DecodeCase {
  std::size_t batch, page_size;
};

class CachedAttentionDecode : public ::testing::TestWithParam<std::tuple<DType, DecodeCase>> {};

TEST_P(CachedAttentionDecode, GlmOcrGeometryMatchesCpu) {
  IL_REQUIRE_GPU();
  const auto [type, dc] = GetParam();
  const std::size_t heads = 16, kv_heads = 8, hd = 128, P = dc.page_size, B = dc.batch;
  std::mt19937 rng(static_cast<unsigned>(B * 31 + P));
  const std::size_t pool_pages = (2048 + P - 1) / P + 3;
  std::vector<int32_t> pool(pool_pages);
  std::iota(pool.begin(), pool.end(), 0);
  std::vector<int32_t> seq_starts = {0}, lengths, page_starts = {0}, pages;
  for (std::size_t s = 0; s < B; ++s) {
    const std::size_t n = 1811 + (s * 37) % 200 + (s == 0 ? 29 : 0);  // 1,840 for the batch of 1
    std::shuffle(pool.begin(), pool.end(), rng);
    for (std::size_t p = 0; p < (n + P - 1) / P; ++p) pages.push_back(pool[p]);
    page_starts.push_back(static_cast<int32_t>(pages.size()));
    lengths.push_back(static_cast<int32_t>(n));
    seq_starts.push_back(static_cast<int32_t>(s + 1));
  }
  const std::size_t real = B, tokens = B + 2;  // two padding tokens (length 0) at the end
  lengths.push_back(0);
  lengths.push_back(0);
  const std::size_t cache_rows = pool_pages * P, qw = heads * hd, kvw = kv_heads * hd;
  TypedArray q(random_values(tokens * qw, rng, 1.0f), type);
  TypedArray k(random_values(cache_rows * kvw, rng, 1.0f), type);
  TypedArray v(random_values(cache_rows * kvw, rng, 1.0f), type);
  TypedArray out(std::vector<float>(tokens * qw, 7.0f), type);
  ops::CachedAttentionArgs a;
  a.q = q.view(0, qw);
  a.k_cache = k.view(0, kvw);
  a.v_cache = v.view(0, kvw);
  a.out = out.view(0, qw);
  a.num_seqs = real;
  a.page_size = P;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.head_dim = hd;
  a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::vector<float> want(tokens * qw, 0.0f);
  {
    ops::CachedAttentionArgs c = a;
    c.q = ops::f32_view(q.values().data(), qw);
    c.k_cache = ops::f32_view(k.values().data(), kvw);
    c.v_cache = ops::f32_view(v.values().data(), kvw);
    c.out = ops::f32_view(want.data(), qw);
    c.seq_starts = seq_starts.data();
    c.cache_lengths = lengths.data();
    c.page_starts = page_starts.data();
    c.pages = pages.data();
    ThreadPool pool_threads(8);
    ops::cached_attention_cpu(c, pool_threads);
  }
  std::vector<int32_t> dev_starts = seq_starts, dev_page_starts = page_starts;
  dev_starts.push_back(seq_starts.back());  // the padding tokens belong to no real sequence
  dev_page_starts.push_back(page_starts.back());
  DeviceArray<int32_t> d_starts(dev_starts), d_lengths(lengths), d_pstarts(dev_page_starts), d_pages(pages);
  a.seq_starts = d_starts.get();
  a.num_seqs = real + 1;
  a.cache_lengths = d_lengths.get();
  a.page_starts = d_pstarts.get();
  a.pages = d_pages.get();
  // The executor's workspace (room for 8,192 partial results of the widest head).
  const std::size_t ws_floats = 8192 * (hd + 2);
  DeviceArray<float> workspace(std::vector<float>(ws_floats, 0.0f));
  a.workspace = workspace.get();
  a.workspace_floats = ws_floats;
  const std::size_t splits = ops::cached_attention_splits(tokens, heads, kv_heads, hd, ws_floats);
  if (B == 1) {
    EXPECT_GE(splits, 32u);  // a single sequence must spread over the device
  }
  ops::cached_attention_cuda(a, tokens, nullptr);
  IL_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> got = out.download();
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < real * qw; ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  const double tol = type == DType::kF32 ? 1e-5 : 2.0 * unit_roundoff(type) * scale + 1e-5;
  std::printf("[cached attention decode %s batch %zu page %zu, %zu split(s)] max-abs %.3g (tolerance %.3g)\n",
              type_name(type).c_str(), B, P, splits, worst, tol);
  EXPECT_LE(worst, tol);
  for (std::size_t t = real; t < tokens; ++t)
    for (std::size_t j = 0; j < qw; ++j) ASSERT_EQ(got[t * qw + j], 0.0f) << "padding token " << t;
}

INSTANTIATE_TEST_SUITE_P(GlmOcr, CachedAttentionDecode,
                         ::testing::Combine(::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                                            ::testing::Values(DecodeCase{1, 64}, DecodeCase{1, 16},
                                                              DecodeCase{64, 64}, DecodeCase{64, 16})));

TEST(KvCacheCopies, WriteAndInjectAreExactCopies) {
  IL_REQUIRE_GPU();
  for (DType type : {DType::kF32, DType::kF16, DType::kBF16}) {
    std::mt19937 rng(5);
    const std::size_t rows = 6, cols = 40, cache = 20;
    TypedArray k(random_values(rows * cols, rng, 1.0f), type), v(random_values(rows * cols, rng, 1.0f), type);
    TypedArray kc(std::vector<float>(cache * cols, 0.5f), type), vc(std::vector<float>(cache * cols, 0.5f), type);
    const std::vector<int32_t> dst = {3, 17, 0, 9, -1, -1};  // two padding rows
    DeviceArray<int32_t> d_dst(dst);
    ops::kv_write_cuda({k.view(0, cols), v.view(0, cols), kc.view(0, cols), vc.view(0, cols), d_dst.get(), rows, cols},
                       nullptr);
    IL_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> gk = kc.download(), gv = vc.download();
    for (std::size_t r = 0; r < cache; ++r) {
      const auto it = std::find(dst.begin(), dst.end(), static_cast<int32_t>(r));
      for (std::size_t c = 0; c < cols; ++c) {
        const float wk = it == dst.end() ? kc.values()[r * cols + c] : k.values()[static_cast<std::size_t>(it - dst.begin()) * cols + c];
        const float wv = it == dst.end() ? vc.values()[r * cols + c] : v.values()[static_cast<std::size_t>(it - dst.begin()) * cols + c];
        ASSERT_EQ(gk[r * cols + c], wk) << type_name(type) << " row " << r;
        ASSERT_EQ(gv[r * cols + c], wv) << type_name(type) << " row " << r;
      }
    }
    // inject: rows 1 and 3 of `out` take rows 7 and 2 of the source; the others keep theirs.
    TypedArray src(random_values(cache * cols, rng, 1.0f), type), out(random_values(rows * cols, rng, 1.0f), type);
    const std::vector<int32_t> from = {-1, 7, -1, 2, -1, -1};
    DeviceArray<int32_t> d_from(from);
    ops::inject_rows_cuda({src.view(0, cols), out.view(0, cols), d_from.get(), rows, cols}, nullptr);
    IL_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> go = out.download();
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) {
        const float w = from[r] < 0 ? out.values()[r * cols + c] : src.values()[static_cast<std::size_t>(from[r]) * cols + c];
        ASSERT_EQ(go[r * cols + c], w) << type_name(type) << " row " << r;
      }
  }
}

}  // namespace
}  // namespace il::test
