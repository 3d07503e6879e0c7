// The CUDA-core attention (ops::attention_cuda) on aligned views, against the CPU op. The kernel
// stages K and V by cp.async (f32) or 8-byte vector loads (f16 / bf16) and stores the output in
// 4-element vectors only when every row of every head starts on a 4-element boundary; the ragged
// cases of ops_attention_parity_test.cc and ops_half_parity_test.cc write the output at column 1,
// so they take the scalar path. Here the output sits at column 4 of a buffer 4 wider than it and
// q | k | v are packed like the fused QKV projection, with head dims that are multiples of 4:
// the vector paths under ragged lengths (0, 1, not multiples of the 64-row tile), causal and
// window masks, GQA and every head-dim bucket (≤ 32, 64, 128, 256). Tolerances as in those files:
// f32 1e-4, f16 / bf16 4 unit roundoffs, relative to the output's scale.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <tuple>

#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "half_test_util.h"
#include "ops/attention.h"
#include "ops/ops_cuda.h"
#include "../unit/reference.h"

namespace il::test {
namespace {

using ops::MaskMode;

double tolerance(DType t) { return t == DType::kF32 ? 1e-4 : 4.0 * unit_roundoff(t); }

// Max error of attention_cuda in type t against attention_cpu on the same (rounded) inputs.
double aligned_error(const AttnCase& c, DType t, uint32_t seed) {
  const auto starts = starts_of(c.lengths);
  const std::size_t total = static_cast<std::size_t>(starts.back());
  const std::size_t qw = c.heads * c.head_dim, kvw = c.kv_heads * c.head_dim, ld = qw + 2 * kvw;
  const std::size_t col = 4, ldo = qw + 4;  // 16-byte aligned in f32, 8-byte in f16 / bf16
  const auto packed = random_vector(total * ld, seed, 1.5f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  std::vector<float> cpu(total * ldo, -0.75f);
  DeviceArray<int32_t> dstarts(starts);
  std::vector<float> inputs, got;  // what the kernel read (rounded to t), what it wrote
  if (t == DType::kF32) {
    DeviceArray<float> dp(packed), dout(cpu);
    ops::attention_cuda(attention_args(ops::f32_view(dp.get(), ld), ops::f32_view(dp.get() + qw, ld),
                                       ops::f32_view(dp.get() + qw + kvw, ld), ops::f32_view(dout.get() + col, ldo),
                                       dstarts.get(), c.lengths.size(), c.heads, c.kv_heads, c.head_dim, scale, c.mask,
                                       c.window, longest(c.lengths)),
                        nullptr);
    inputs = packed;
    got = dout.download();
  } else {
    const HalfArray qkv(packed, t), out(cpu, t);  // the sentinel −0.75 is exact in both types
    ops::attention_cuda(attention_args(qkv.view(0, ld), qkv.view(qw, ld), qkv.view(qw + kvw, ld), out.view(col, ldo),
                                       dstarts.get(), c.lengths.size(), c.heads, c.kv_heads, c.head_dim, scale, c.mask,
                                       c.window, longest(c.lengths)),
                        nullptr);
    inputs = qkv.rounded();
    got = out.download();
  }
  const float* in = inputs.data();
  ThreadPool pool(0);
  ops::attention_cpu({in, ld, in + qw, ld, in + qw + kvw, ld, cpu.data() + col, ldo, starts.data(), c.lengths.size(),
                      c.heads, c.kv_heads, c.head_dim, scale, c.mask, c.window},
                     pool);
  return rel_error(got, cpu);
}

class GpuAttentionAligned : public ::testing::TestWithParam<std::tuple<AttnCase, DType>> {};

TEST_P(GpuAttentionAligned, VectorPathsMatchCpu) {
  IL_REQUIRE_GPU();
  const auto& [c, t] = GetParam();
  const double err = aligned_error(c, t, 31);
  std::printf("[attention aligned] %s: max error %.3g (tolerance %.3g)\n", type_name(t).c_str(), err, tolerance(t));
  EXPECT_LE(err, tolerance(t)) << c << ", " << type_name(t);
}

INSTANTIATE_TEST_SUITE_P(
    Ragged, GpuAttentionAligned,
    ::testing::Combine(
        ::testing::Values(AttnCase{kMixedLengths, 12, 12, 64, MaskMode::kBidirectional, 0},
                          AttnCase{kMixedLengths, 4, 2, 64, MaskMode::kCausal, 0},
                          AttnCase{kMixedLengths, 4, 4, 32, MaskMode::kCausal, 0},
                          AttnCase{kMixedLengths, 6, 1, 80, MaskMode::kBidirectional, 128},
                          AttnCase{kMixedLengths, 2, 2, 128, MaskMode::kCausal, 0},
                          AttnCase{kMixedLengths, 4, 2, 128, MaskMode::kBidirectional, 16},
                          AttnCase{{257, 3, 1000}, 2, 1, 256, MaskMode::kBidirectional, 0},
                          AttnCase{{300, 41, 0, 129}, 4, 4, 256, MaskMode::kCausal, 63},
                          AttnCase{{97, 1, 33}, 4, 2, 16, MaskMode::kCausal, 0},
                          AttnCase{{1, 2, 3, 5, 8, 13, 21, 34, 55}, 6, 3, 4, MaskMode::kCausal, 5},
                          AttnCase{{300, 41}, 3, 3, 48, MaskMode::kCausal, 63},
                          AttnCase{{3000, 70}, 4, 2, 64, MaskMode::kCausal, 0}),
        ::testing::Values(DType::kF32, DType::kF16, DType::kBF16)),
    [](const auto& info) { return std::to_string(info.index) + "_" + type_name(std::get<1>(info.param)); });

}  // namespace
}  // namespace il::test
