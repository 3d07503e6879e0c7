// Key limits on CUDA (plan::Batch::key_limits: PyLate's masked query expansion): the attention
// dispatch sends a case with key limits to the flash kernel, and its result equals the CPU op's
// with the same limits (random inputs rounded once to the type, ragged batches with an empty
// sequence, limits of 1, mid-sequence and the whole sequence, causal and bidirectional, GQA); the
// short convolution zeroes the rows from each sequence's limit on, as the CPU op does.
// Tolerances: f32 2e-6 of the output's scale (the flash kernel's exp2 and summation order against
// the CPU's); f16 / bf16 2 unit roundoffs of the type plus that (one rounding of the output).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "half_test_util.h"
#include "ops/attention.h"
#include "ops/attention_dispatch_cuda.h"
#include "ops/ops_cuda.h"
#include "ops/short_conv.h"
#include "../unit/reference.h"

namespace il::test {
namespace {


class KeyLimits : public ::testing::TestWithParam<DType> {
 protected:
  DType type() const { return GetParam(); }
  double tol() const { return 2e-6 + (type() == DType::kF32 ? 0.0 : 2.0 * unit_roundoff(type())); }
};

TEST_P(KeyLimits, AttentionReadsNoKeyPastTheLimit) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  const std::vector<int32_t> lengths = {5, 0, 97, 33, 300, 1};
  const std::vector<int32_t> limits = {1, 1, 50, 33, 7, 1};  // 1 for the empty sequence: any will do
  const auto starts = starts_of(lengths);
  const std::size_t total = static_cast<std::size_t>(starts.back());
  const DeviceArray<int32_t> dstarts(starts), dlimits(limits);
  uint32_t seed = 41;
  double worst = 0;
  for (const ops::MaskMode mask : {ops::MaskMode::kBidirectional, ops::MaskMode::kCausal})
    for (const std::size_t head_dim : {std::size_t{24}, std::size_t{64}}) {
      const std::size_t heads = 4, kv_heads = 2, qw = heads * head_dim, kvw = kv_heads * head_dim;
      const std::size_t ld = qw + 2 * kvw;
      const TypedArray in(random_vector(total * ld, seed++, 1.5f), type());
      const TypedArray out(std::vector<float>(total * qw, 0.5f), type());
      ops::AttentionCudaArgs a;
      a.q = in.get();
      const std::size_t es = dtype_size(type());
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
      a.mask = mask;
      a.type = type();
      a.max_seq_len = longest(lengths);
      a.rows = total;
      a.key_limits = dlimits.get();
      EXPECT_EQ(ops::choose_attention_kernel(a), ops::AttentionKernel::kFlash);
      ops::attention_dispatch_cuda(a, nullptr);
      std::vector<float> want(total * qw, 0.0f);
      const float* x = in.values().data();
      ops::AttentionArgs c{x, ld, x + qw, ld, x + qw + kvw, ld, want.data(), qw, starts.data(), lengths.size(),
                           heads, kv_heads, head_dim, 0.2f, mask, 0, limits.data()};
      ops::attention_cpu(c, pool);
      const double err = rel_error(out.download(), want);
      worst = std::max(worst, err);
      EXPECT_LE(err, tol()) << type_name(type()) << (mask == ops::MaskMode::kCausal ? " causal" : " bidirectional")
                            << " head_dim " << head_dim;
    }
  std::printf("[key limits] attention %s: worst %.3g (tolerance %.3g)\n", type_name(type()).c_str(), worst, tol());
}

TEST_P(KeyLimits, ShortConvZeroesMaskedRows) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  const std::vector<int32_t> lengths = {6, 0, 40, 3, 1};
  const std::vector<int32_t> limits = {2, 1, 40, 1, 1};
  const auto starts = starts_of(lengths);
  const std::size_t tokens = static_cast<std::size_t>(starts.back()), rows = tokens + 5, n = 37, taps = 3;
  const TypedArray x(random_vector(rows * 3 * n, 77, 2.0f), type());
  const std::vector<float> w = random_vector(n * taps, 78, 0.7f);
  std::vector<float> want(rows * n, 0.25f);
  ops::ShortConvArgs c{ops::f32_view(x.values().data(), 3 * n), w.data(), ops::f32_view(want.data(), n),
                       starts.data(), lengths.size(), rows, n, taps};
  c.key_limits = limits.data();
  ops::short_conv_cpu(c, pool);
  // The CPU op's contract: rows from a sequence's limit on are zero.
  for (std::size_t s = 0; s < lengths.size(); ++s)
    for (int32_t r = starts[s] + limits[s]; r < starts[s + 1]; ++r)
      for (std::size_t j = 0; j < n; ++j) ASSERT_EQ(want[static_cast<std::size_t>(r) * n + j], 0.0f) << r;
  const DeviceArray<float> dw(w);
  const DeviceArray<int32_t> dstarts(starts), dlimits(limits);
  const TypedArray out(std::vector<float>(rows * n, 0.25f), type());
  ops::ShortConvArgs g{x.view(0, 3 * n), dw.get(), out.view(0, n), dstarts.get(), lengths.size(), rows, n, taps};
  g.key_limits = dlimits.get();
  ops::short_conv_cuda(g, nullptr);
  const double tol = type() == DType::kF32 ? 1e-6 : 4.0 * unit_roundoff(type());
  EXPECT_LE(rel_error(out.download(), want), tol) << type_name(type());
}

INSTANTIATE_TEST_SUITE_P(Types, KeyLimits, ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return type_name(info.param); });

}  // namespace
}  // namespace il::test
