// DeBERTa's disentangled attention on CUDA against the CPU op (ops/disentangled_attention.h):
// random q, k, v and relative tables, ragged batches with empty and one-token sequences and
// sequences past the log buckets' edge, odd head sizes (8, 40, 64, 72, 128: the kernel's 32-, 64-
// and 128-column forms with padding columns), both relative terms, one, or none, strided
// views into a packed QKV buffer; f32 (within 1e-5 relative), f16 and bf16 (the CPU reference
// on exactly the rounded inputs, within a few units of the storage type's rounding, since the
// kernel computes in f32 and rounds once on the store).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>

#include "gpu_test_util.h"
#include "half_test_util.h"
#include "ops/disentangled_attention.h"
#include "ops/ops_cuda.h"

namespace il::test {
namespace {

struct Case {
  std::size_t heads, head_dim;
  std::vector<int32_t> lengths;
  int buckets, max_rel;  // buckets <= 0: raw distances clamped at max_rel
  bool c2p, p2c;
};

std::vector<float> random_vec(std::size_t n, std::mt19937& g, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

// The CPU result for q, k, v packed as [T, 3·w] (q, then k, then v columns), into [T, w].
std::vector<float> cpu_reference(const Case& c, const std::vector<float>& qkv, const std::vector<float>& pos_key,
                                 const std::vector<float>& pos_query, const std::vector<float>& rel, int span,
                                 std::size_t max_len) {
  const std::size_t w = c.heads * c.head_dim;
  const std::vector<int32_t> starts = starts_of(c.lengths);
  const std::size_t T = static_cast<std::size_t>(starts.back());
  std::vector<float> out(T * w, -7.0f);
  ops::DisentangledAttentionArgs a;
  a.q = ops::f32_view(qkv.data(), 3 * w);
  a.k = ops::f32_view(qkv.data() + w, 3 * w);
  a.v = ops::f32_view(qkv.data() + 2 * w, 3 * w);
  a.out = ops::f32_view(out.data(), w);
  a.seq_starts = starts.data();
  a.num_seqs = c.lengths.size();
  a.heads = c.heads;
  a.head_dim = c.head_dim;
  a.pos_key = c.c2p ? pos_key.data() : nullptr;
  a.pos_query = c.p2c ? pos_query.data() : nullptr;
  a.span = static_cast<std::size_t>(span);
  a.rel_index = rel.data();
  a.max_len = max_len;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim) * static_cast<float>(1 + c.c2p + c.p2c));
  ThreadPool pool(2);
  ops::disentangled_attention_cpu(a, pool);
  return out;
}

class DisentangledParity : public ::testing::TestWithParam<std::tuple<Case, DType>> {};

TEST_P(DisentangledParity, CudaMatchesCpu) {
  IL_REQUIRE_GPU();
  const auto& [c, type] = GetParam();
  std::mt19937 g(1234 + static_cast<unsigned>(c.head_dim));
  const std::size_t w = c.heads * c.head_dim;
  const std::vector<int32_t> starts = starts_of(c.lengths);
  const std::size_t T = static_cast<std::size_t>(starts.back());
  const int span = c.buckets > 0 ? c.buckets : c.max_rel;
  const std::size_t max_len = std::max<std::size_t>(longest(c.lengths), 1) + 3;
  const std::vector<float> rel = ops::deberta_rel_index_table(max_len, span, c.buckets, c.max_rel);
  const std::vector<float> pos_key = random_vec(static_cast<std::size_t>(2 * span) * w, g, 1.0f);
  const std::vector<float> pos_query = random_vec(static_cast<std::size_t>(2 * span) * w, g, 1.0f);
  const std::vector<float> qkv_host = random_vec(std::max<std::size_t>(T, 1) * 3 * w, g, 1.0f);

  DeviceArray<int32_t> d_starts(starts);
  DeviceArray<float> d_pk(pos_key), d_pq(pos_query), d_rel(rel);
  ops::DisentangledAttentionArgs a;
  a.seq_starts = d_starts.get();
  a.num_seqs = c.lengths.size();
  a.heads = c.heads;
  a.head_dim = c.head_dim;
  a.pos_key = c.c2p ? d_pk.get() : nullptr;
  a.pos_query = c.p2c ? d_pq.get() : nullptr;
  a.span = static_cast<std::size_t>(span);
  a.rel_index = d_rel.get();
  a.max_len = max_len;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim) * static_cast<float>(1 + c.c2p + c.p2c));
  // Grids sized past the longest sequence, as the executor's bucketed lengths are.
  const std::size_t grid_len = longest(c.lengths) + 9;

  std::vector<float> got, want;
  if (type == DType::kF32) {
    DeviceArray<float> d_qkv(qkv_host);
    DeviceArray<float> d_out(std::vector<float>(std::max<std::size_t>(T, 1) * w, -7.0f));
    a.q = ops::f32_view(d_qkv.get(), 3 * w);
    a.k = ops::f32_view(d_qkv.get() + w, 3 * w);
    a.v = ops::f32_view(d_qkv.get() + 2 * w, 3 * w);
    a.out = ops::f32_view(d_out.get(), w);
    ops::disentangled_attention_cuda(a, grid_len, nullptr);
    got = d_out.download();
    want = cpu_reference(c, qkv_host, pos_key, pos_query, rel, span, max_len);
  } else {
    HalfArray d_qkv(qkv_host, type);
    HalfArray d_out(std::vector<float>(std::max<std::size_t>(T, 1) * w, -7.0f), type);
    a.q = d_qkv.view(0, 3 * w);
    a.k = d_qkv.view(w, 3 * w);
    a.v = d_qkv.view(2 * w, 3 * w);
    a.out = d_out.view(0, w);
    ops::disentangled_attention_cuda(a, grid_len, nullptr);
    got = d_out.download();
    want = cpu_reference(c, d_qkv.rounded(), pos_key, pos_query, rel, span, max_len);
  }
  IL_CUDA_CHECK(cudaDeviceSynchronize());
  got.resize(T * w);
  want.resize(T * w);
  // Outputs are convex combinations of v rows (|v| of a few units): f32 agrees to accumulated
  // rounding; a half type to its one rounding of the f32 result (plus the f32 differences).
  const double tol = type == DType::kF32 ? 1e-5 : 4.0 * unit_roundoff(type) + 1e-5;
  EXPECT_LE(rel_error(got, want), tol) << type_name(type);
}

// The table form (a tables workspace): tensor cores in f16 / bf16, the f32 flash kernel in f32.
// The CPU reference gets the relative tables rounded to the type as well, as the table products
// multiply them. The workspace starts
// as NaN, so a table entry read but never written fails the comparison; it has rows past the
// batch's (table_rows > T), as the executor's bucketed row counts do.
class DisentangledTensorCore : public ::testing::TestWithParam<std::tuple<Case, DType>> {};

TEST_P(DisentangledTensorCore, MatchesCpuOnRoundedTables) {
  IL_REQUIRE_GPU();
  const auto& [c, type] = GetParam();
  std::mt19937 g(4321 + static_cast<unsigned>(c.head_dim));
  const std::size_t w = c.heads * c.head_dim;
  const std::vector<int32_t> starts = starts_of(c.lengths);
  const std::size_t T = static_cast<std::size_t>(starts.back());
  const int span = c.buckets > 0 ? c.buckets : c.max_rel;
  const std::size_t max_len = std::max<std::size_t>(longest(c.lengths), 1) + 3;
  const std::vector<float> rel = ops::deberta_rel_index_table(max_len, span, c.buckets, c.max_rel);
  const TypedArray pk(random_vec(static_cast<std::size_t>(2 * span) * w, g, 1.0f), type);
  const TypedArray pq(random_vec(static_cast<std::size_t>(2 * span) * w, g, 1.0f), type);
  const TypedArray qkv(random_vec(std::max<std::size_t>(T, 1) * 3 * w, g, 1.0f), type);
  TypedArray out(std::vector<float>(std::max<std::size_t>(T, 1) * w, -7.0f), type);
  const int terms = c.c2p + c.p2c;
  const std::size_t table_rows = T + 7;
  const std::size_t floats = ops::disentangled_table_floats(table_rows, c.heads, static_cast<std::size_t>(span), terms);
  DeviceArray<float> tables(std::vector<float>(std::max<std::size_t>(floats, 1), std::nanf("")));
  DeviceArray<int32_t> d_starts(starts);
  DeviceArray<float> d_pk(pk.values()), d_pq(pq.values()), d_rel(rel);

  ops::DisentangledAttentionArgs a;
  a.q = qkv.view(0, 3 * w);
  a.k = qkv.view(w, 3 * w);
  a.v = qkv.view(2 * w, 3 * w);
  a.out = out.view(0, w);
  a.seq_starts = d_starts.get();
  a.num_seqs = c.lengths.size();
  a.heads = c.heads;
  a.head_dim = c.head_dim;
  a.pos_key = c.c2p ? d_pk.get() : nullptr;
  a.pos_query = c.p2c ? d_pq.get() : nullptr;
  a.span = static_cast<std::size_t>(span);
  a.rel_index = d_rel.get();
  a.max_len = max_len;
  a.buckets = c.buckets;
  a.max_rel = c.max_rel;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim) * static_cast<float>(1 + terms));
  a.pos_key_t = pk.view(0, w);
  a.pos_query_t = pq.view(0, w);
  a.tables = tables.get();
  a.table_floats = floats;
  a.table_rows = table_rows;
  ops::disentangled_attention_cuda(a, longest(c.lengths) + 9, nullptr);
  std::vector<float> got = out.download();
  std::vector<float> want = cpu_reference(c, qkv.values(), pk.values(), pq.values(), rel, span, max_len);
  got.resize(T * w);
  want.resize(T * w);
  // Rounding points: P to the type for P·V (within u), the output once (u); the f32 tables and
  // sums add f32 noise only (docs/design/deberta-tensor-core-attention.md §1). f32: the f32 flash
  // kernel over f32 tables, within accumulated rounding as the CUDA-core kernel.
  const double err = rel_error(got, want);
  EXPECT_LE(err, type == DType::kF32 ? 1e-5 : 4.0 * unit_roundoff(type) + 1e-5) << type_name(type);
  std::printf("[ disentangled tc ] heads %zu head_dim %zu terms %d %s: rel error %.3g\n", c.heads, c.head_dim, terms,
              std::string(type_name(type)).c_str(), err);
  // The form really ran: its tables were written (the first entry is a real row's).
  if (T > 0 && terms > 0) {
    EXPECT_FALSE(std::isnan(tables.download()[0])) << "the tensor-core form did not run";
  }
  // A workspace of one head's tables: the heads run in passes, with the same result.
  if (c.heads > 1 && terms > 0) {
    TypedArray out2(std::vector<float>(std::max<std::size_t>(T, 1) * w, -7.0f), type);
    a.out = out2.view(0, w);
    a.table_floats = ops::disentangled_table_floats(table_rows, 1, static_cast<std::size_t>(span), terms);
    ops::disentangled_attention_cuda(a, longest(c.lengths) + 9, nullptr);
    std::vector<float> got2 = out2.download();
    got2.resize(T * w);
    EXPECT_EQ(got2, got) << "one head a pass";
  }
}

const Case kCases[] = {
    {4, 64, {1, 37, 0, 100, 5}, 16, 64, true, true},   // DeBERTa-v3's form, past the bucket edge
    {3, 40, {130, 2, 17}, 16, 64, true, true},         // odd head_dim (64-column form, padded)
    {2, 8, {9, 33}, 8, 24, true, false},                // c2p only, 32-column form
    {2, 72, {50, 1}, -1, 12, false, true},              // p2c only, raw distances clamped at 12
    {1, 128, {70}, 32, 128, true, true},                // 128-column form
    {2, 64, {20, 3}, 16, 64, false, false},             // no relative term: plain attention
};

// DeBERTa-v3-base's relative geometry (span 256, 256 buckets, max_relative 512) at head_dim 64:
// sequences across the bucket edge (|i − j| = 128) and the 64-key / 128-row tiles.
const Case kTensorCoreCases[] = {
    {2, 64, {256, 255, 0, 1, 129, 128, 64, 65, 200}, 256, 512, true, true},
    {4, 64, {1, 37, 0, 100, 5}, 16, 64, true, true},
    {3, 40, {130, 2, 17}, 16, 64, true, true},   // head_dim 40 in the 64-column form
    {2, 8, {9, 33}, 8, 24, true, false},          // c2p only, 32-column form
    {2, 72, {50, 1}, -1, 12, false, true},        // p2c only, raw distances clamped at 12, 96 columns
    {1, 128, {70, 3}, 32, 128, true, true},       // 128-column form
    {2, 16, {300, 2, 45}, 32, 64, true, true},    // the fixtures' head_dim, past the table's reach
};

INSTANTIATE_TEST_SUITE_P(Cases, DisentangledTensorCore,
                         ::testing::Combine(::testing::ValuesIn(kTensorCoreCases),
                                            ::testing::Values(DType::kF32, DType::kF16, DType::kBF16)));

INSTANTIATE_TEST_SUITE_P(Cases, DisentangledParity,
                         ::testing::Combine(::testing::ValuesIn(kCases),
                                            ::testing::Values(DType::kF32, DType::kF16, DType::kBF16)));

}  // namespace
}  // namespace il::test
