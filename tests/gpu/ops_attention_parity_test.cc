// CUDA attention, embedding and pooling against the CPU ops: ragged batches mixing lengths 1 …
// 1000 (and empty sequences), GQA, causal and window masks, head dims up to 256, strided views,
// and one 8192-token sequence. f32 max-abs error ≤ 1e-4 relative to the output's scale.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "half_test_util.h"
#include "ops/attention.h"
#include "ops/embed.h"
#include "ops/ops_cuda.h"
#include "ops/pool.h"
#include "../unit/reference.h"

namespace il::test {
namespace {

using ops::f32_view;

constexpr double kTol = 1e-4;
constexpr float kSentinel = -0.75f;  // small: it counts in the scale the tolerance is relative to

// Runs both ops on q, k, v packed like the fused QKV projection (one buffer, q | k | v per row)
// and an output window at column 1 of a wider buffer; returns the max error relative to scale.
double attention_error(const AttnCase& c, uint32_t seed) {
  const auto starts = starts_of(c.lengths);
  const std::size_t total = static_cast<std::size_t>(starts.back());
  const std::size_t qw = c.heads * c.head_dim, kvw = c.kv_heads * c.head_dim, ld = qw + 2 * kvw;
  const std::size_t ldo = qw + 3;
  const auto packed = random_vector(total * ld, seed, 1.5f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  std::vector<float> out_cpu(total * ldo, kSentinel);
  ThreadPool pool(0);
  ops::attention_cpu({packed.data(), ld, packed.data() + qw, ld, packed.data() + qw + kvw, ld, out_cpu.data() + 1,
                      ldo, starts.data(), c.lengths.size(), c.heads, c.kv_heads, c.head_dim, scale, c.mask, c.window},
                     pool);
  DeviceArray<float> dp(packed), dout(std::vector<float>(total * ldo, kSentinel));
  DeviceArray<int32_t> dstarts(starts);
  ops::attention_cuda(attention_args(f32_view(dp.get(), ld), f32_view(dp.get() + qw, ld),
                                     f32_view(dp.get() + qw + kvw, ld), f32_view(dout.get() + 1, ldo), dstarts.get(),
                                     c.lengths.size(), c.heads, c.kv_heads, c.head_dim, scale, c.mask, c.window,
                                     longest(c.lengths)),
                      nullptr);
  const auto out_gpu = dout.download();
  return rel_error(out_gpu, out_cpu);
}

class GpuAttention : public ::testing::TestWithParam<AttnCase> {};

TEST_P(GpuAttention, MatchesCpu) {
  IL_REQUIRE_GPU();
  EXPECT_LE(attention_error(GetParam(), 42), kTol) << GetParam();
}

using ops::MaskMode;

INSTANTIATE_TEST_SUITE_P(
    Ragged, GpuAttention,
    ::testing::Values(AttnCase{{1}, 1, 1, 1, MaskMode::kBidirectional, 0},
                      AttnCase{{7}, 2, 2, 8, MaskMode::kBidirectional, 0},
                      AttnCase{kMixedLengths, 4, 4, 32, MaskMode::kBidirectional, 0},
                      AttnCase{kMixedLengths, 12, 12, 64, MaskMode::kBidirectional, 0},
                      AttnCase{kMixedLengths, 4, 2, 64, MaskMode::kCausal, 0},
                      AttnCase{kMixedLengths, 6, 1, 80, MaskMode::kBidirectional, 128},
                      AttnCase{kMixedLengths, 2, 2, 128, MaskMode::kCausal, 0},
                      AttnCase{kMixedLengths, 4, 2, 128, MaskMode::kBidirectional, 16},
                      AttnCase{{257, 3, 1000}, 2, 1, 256, MaskMode::kBidirectional, 0},
                      AttnCase{{97, 1, 33}, 4, 2, 16, MaskMode::kCausal, 0},
                      AttnCase{{1, 2, 3, 5, 8, 13, 21, 34, 55}, 6, 3, 7, MaskMode::kCausal, 5},
                      AttnCase{{300, 41}, 3, 3, 48, MaskMode::kCausal, 63},
                      // Qwen3's layouts: head_dim 24 (the fixture) and 128, causal, GQA 2:1.
                      AttnCase{kMixedLengths, 4, 2, 24, MaskMode::kCausal, 0},
                      AttnCase{{1, 0, 40, 1500}, 16, 8, 128, MaskMode::kCausal, 0},
                      // ModernBERT's sliding layers: bidirectional windows of ±64 (ModernBERT-base,
                      // head_dim 64) and ±8 (the fixtures, head_dim 16), sequences far longer.
                      AttnCase{{1, 0, 40, 129, 1500}, 12, 12, 64, MaskMode::kBidirectional, 128},
                      AttnCase{{64, 17, 9, 8, 1}, 4, 4, 16, MaskMode::kBidirectional, 16}));

// attention_first_cuda / attention_last_cuda (each sequence's first or last query row, into row
// s) against attention_first_cpu / attention_last_cpu on the same inputs, in every element type:
// f32 within kTol; f16 / bf16 on inputs rounded once (the CPU sees exactly those), the kernel
// computing in f32 and rounding the output once, so 2u of the output's scale bounds it (u the
// type's unit roundoff). Rows past the heads keep their value; empty sequences give zeros.
TEST_P(GpuAttention, FirstAndLastRowsMatchCpu) {
  IL_REQUIRE_GPU();
  const AttnCase& c = GetParam();
  const auto starts = starts_of(c.lengths);
  const std::size_t total = static_cast<std::size_t>(starts.back()), seqs = c.lengths.size();
  const std::size_t qw = c.heads * c.head_dim, kvw = c.kv_heads * c.head_dim, ld = qw + 2 * kvw, ldo = qw + 3;
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const auto packed = random_vector(total * ld, 17, 1.5f);
  DeviceArray<int32_t> dstarts(starts);
  ThreadPool pool(0);
  for (bool last : {false, true})
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
      HalfArray half(packed, t == DType::kF32 ? DType::kF16 : t);  // unused for f32
      const std::vector<float>& in = t == DType::kF32 ? packed : half.rounded();
      std::vector<float> out_cpu(seqs * ldo, kSentinel);
      const ops::AttentionArgs cpu_args{in.data(), ld, in.data() + qw, ld, in.data() + qw + kvw, ld, out_cpu.data() + 1,
                                        ldo, starts.data(), seqs, c.heads, c.kv_heads, c.head_dim, scale, c.mask,
                                        c.window};
      if (last) ops::attention_last_cpu(cpu_args, pool);
      else ops::attention_first_cpu(cpu_args, pool);
      const auto launch = [&](ops::ConstTensorView q, ops::ConstTensorView k, ops::ConstTensorView v,
                              ops::TensorView out) {
        const ops::AttentionCudaArgs a =
            attention_args(q, k, v, out, dstarts.get(), seqs, c.heads, c.kv_heads, c.head_dim, scale, c.mask, c.window,
                           longest(c.lengths), last ? ops::AttentionQueries::kLast : ops::AttentionQueries::kFirst);
        if (last) ops::attention_last_cuda(a, nullptr);
        else ops::attention_first_cuda(a, nullptr);
      };
      std::vector<float> out_gpu;
      if (t == DType::kF32) {
        DeviceArray<float> dp(packed), dout(std::vector<float>(seqs * ldo, kSentinel));
        launch(f32_view(dp.get(), ld), f32_view(dp.get() + qw, ld), f32_view(dp.get() + qw + kvw, ld),
               f32_view(dout.get() + 1, ldo));
        out_gpu = dout.download();
      } else {
        HalfArray dout(std::vector<float>(seqs * ldo, kSentinel), t);
        launch(half.view(0, ld), half.view(qw, ld), half.view(qw + kvw, ld), dout.view(1, ldo));
        out_gpu = dout.download();
      }
      const double err = rel_error(out_gpu, out_cpu);
      const double tol = t == DType::kF32 ? kTol : 2 * unit_roundoff(t);
      std::printf("[attention %s rows] %s %s: max error %.3g (tolerance %.3g)\n", last ? "last" : "first",
                  type_name(t).c_str(), ::testing::PrintToString(c).c_str(), err, tol);
      EXPECT_LE(err, tol) << (last ? "last " : "first ") << type_name(t) << " " << c;
    }
}

TEST(GpuPool, KeepsTheElementTypeForFirstTokenRows) {
  IL_REQUIRE_GPU();
  // CLS rows gathered into f16 / bf16 rows (a CLS-pooled model's last layer): exact copies.
  const std::vector<int32_t> lengths = {3, 0, 1, 40};
  const auto starts = starts_of(lengths);
  const std::size_t total = static_cast<std::size_t>(starts.back()), cols = 96, ldx = cols + 8;
  DeviceArray<int32_t> dstarts(starts);
  for (DType t : {DType::kF16, DType::kBF16}) {
    HalfArray x(random_vector(total * ldx, 5, 2.0f), t);
    HalfArray out(std::vector<float>(lengths.size() * cols, kSentinel), t);
    ops::pool_cuda(
        {x.view(0, ldx), out.view(0, cols), dstarts.get(), lengths.size(), cols, PoolingMode::kCls, nullptr}, nullptr);
    const auto got = out.download();
    for (std::size_t s = 0; s < lengths.size(); ++s)
      for (std::size_t j = 0; j < cols; ++j) {
        const float want = lengths[s] == 0 ? 0.0f : x.rounded()[static_cast<std::size_t>(starts[s]) * ldx + j];
        ASSERT_EQ(got[s * cols + j], want) << type_name(t) << " sequence " << s << " column " << j;
      }
  }
}

TEST(GpuAttentionLong, Sequence8192MatchesCpuWithoutDeviceAllocation) {
  IL_REQUIRE_GPU();
  // One 8192-token sequence: an n × n f32 score buffer would need 256 MiB per head, 512 MiB
  // here. Ours allocates nothing: device free memory stays within a few MiB (lazy module
  // loading, page granularity) across the launch. A first small launch loads the kernel.
  const AttnCase c{{8192}, 2, 2, 64, MaskMode::kBidirectional, 0};
  const auto starts = starts_of(c.lengths);
  const std::size_t total = 8192, width = c.heads * c.head_dim, ld = 3 * width;
  const auto packed = random_vector(total * ld, 11, 1.0f);
  DeviceArray<float> dp(packed), dout(std::vector<float>(total * width, 0.0f));
  DeviceArray<int32_t> dstarts(starts);
  const auto args = [&](std::size_t max_seq_len) {
    return attention_args(f32_view(dp.get(), ld), f32_view(dp.get() + width, ld), f32_view(dp.get() + 2 * width, ld),
                          f32_view(dout.get(), width), dstarts.get(), 1, c.heads, c.heads, c.head_dim, 0.125f, c.mask,
                          0, max_seq_len);
  };
  ops::attention_cuda(args(1), nullptr);  // warm-up: a grid for 1 row computes only the first 32 rows
  IL_CUDA_CHECK(cudaDeviceSynchronize());
  std::size_t free_before = 0, free_after = 0, total_mem = 0;
  IL_CUDA_CHECK(cudaMemGetInfo(&free_before, &total_mem));
  ops::attention_cuda(args(total), nullptr);
  IL_CUDA_CHECK(cudaDeviceSynchronize());
  IL_CUDA_CHECK(cudaMemGetInfo(&free_after, &total_mem));
  const double grown_mib = (static_cast<double>(free_before) - static_cast<double>(free_after)) / (1 << 20);
  EXPECT_LE(grown_mib, 16.0) << "attention took device memory during the launch";
  std::vector<float> out_cpu(total * width);
  ThreadPool pool(0);
  ops::attention_cpu({packed.data(), ld, packed.data() + width, ld, packed.data() + 2 * width, ld, out_cpu.data(),
                      width, starts.data(), 1, c.heads, c.heads, c.head_dim, 0.125f, c.mask, 0},
                     pool);
  EXPECT_LE(rel_error(dout.download(), out_cpu), kTol);
}

TEST(GpuAttentionLong, CausalAndWindowed8192MatchCpu) {
  IL_REQUIRE_GPU();
  EXPECT_LE(attention_error({{8192}, 4, 2, 64, MaskMode::kCausal, 0}, 12), kTol);
  EXPECT_LE(attention_error({{8192, 5}, 2, 2, 128, MaskMode::kBidirectional, 256}, 13), kTol);
}

TEST(GpuEmbed, MatchesCpuWithPositionsOffsetsAndTypes) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  const std::size_t cols = 97, ldo = cols + 4, vocab = 50, max_pos = 1100, offset = 2;
  const std::vector<int32_t> lengths = {1, 5, 0, 1000, 17, 300};
  const auto starts = starts_of(lengths);
  const std::size_t total = static_cast<std::size_t>(starts.back());
  std::vector<int32_t> tokens(total), types(total);
  for (std::size_t t = 0; t < total; ++t) {
    tokens[t] = static_cast<int32_t>((t * 7 + 3) % vocab);
    types[t] = static_cast<int32_t>(t % 2);
  }
  const auto word = random_vector(vocab * cols, 21), pos = random_vector(max_pos * cols, 22),
             type = random_vector(2 * cols, 23);
  DeviceArray<int32_t> dtok(tokens), dtypes(types), dstarts(starts);
  DeviceArray<float> dword(word), dpos(pos), dtype(type);
  for (int variant = 0; variant < 3; ++variant) {
    // 0: word + position + type ids; 1: type table without ids (all 0); 2: word only.
    const bool with_pos = variant < 2, with_type = variant < 2, with_ids = variant == 0;
    std::vector<float> out_cpu(total * ldo, kSentinel);
    ops::embed_cpu({tokens.data(), with_ids ? types.data() : nullptr, starts.data(), lengths.size(),
                    f32_view(word.data()), f32_view(with_pos ? pos.data() : nullptr), offset,
                    f32_view(with_type ? type.data() : nullptr), f32_view(out_cpu.data() + 1, ldo), cols},
                   pool);
    DeviceArray<float> dout(std::vector<float>(total * ldo, kSentinel));
    ops::embed_cuda({dtok.get(), with_ids ? dtypes.get() : nullptr, dstarts.get(), lengths.size(),
                     f32_view(dword.get()), f32_view(with_pos ? dpos.get() : nullptr), offset,
                     f32_view(with_type ? dtype.get() : nullptr), f32_view(dout.get() + 1, ldo), cols},
                    total, nullptr);
    EXPECT_LE(rel_error(dout.download(), out_cpu), kTol) << "variant " << variant;
  }
}

TEST(GpuPool, MatchesCpuForEveryModeAndEmptySequences) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  const std::vector<int32_t> lengths = {1, 0, 7, 1000, 97, 2, 257};
  const auto starts = starts_of(lengths);
  const std::size_t total = static_cast<std::size_t>(starts.back());
  for (std::size_t cols : {1, 97, 768}) {
    const std::size_t ldx = cols + 2, ldo = cols + 1;
    auto x = random_vector(total * ldx, 31, 2.0f);
    for (float& v : x) v += 1.0f;
    DeviceArray<float> dx(x);
    DeviceArray<int32_t> dstarts(starts);
    // Pool starts leave leading (prompt) rows out: none, some, all of a sequence.
    std::vector<int32_t> from(lengths.size());
    for (std::size_t s = 0; s < lengths.size(); ++s)
      from[s] = starts[s] + std::min<int32_t>(lengths[s], static_cast<int32_t>(s % 3 == 2 ? lengths[s] : s * 3));
    DeviceArray<int32_t> dfrom(from);
    for (PoolingMode mode : {PoolingMode::kMean, PoolingMode::kCls, PoolingMode::kLastToken})
      for (bool skip : {false, true}) {
        std::vector<float> out_cpu(lengths.size() * ldo, kSentinel);
        ops::pool_cpu({f32_view(x.data() + 1, ldx), f32_view(out_cpu.data(), ldo), starts.data(), lengths.size(), cols,
                       mode, skip ? from.data() : nullptr},
                      pool);
        DeviceArray<float> dout(std::vector<float>(lengths.size() * ldo, kSentinel));
        ops::pool_cuda({f32_view(dx.get() + 1, ldx), f32_view(dout.get(), ldo), dstarts.get(), lengths.size(), cols,
                        mode, skip ? dfrom.get() : nullptr},
                       nullptr);
        EXPECT_LE(rel_error(dout.download(), out_cpu), kTol)
            << "cols " << cols << " mode " << pooling_name(mode) << " pool starts " << skip;
      }
  }
}

TEST(GpuL2Rows, MatchesCpuAndLeavesZeroRowsZero) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  for (std::size_t rows : {1, 7, 97, 257, 1025}) {
    const std::size_t cols = 384, ld = cols + 3;
    auto x = random_vector(rows * ld, 41, 3.0f);
    for (std::size_t j = 0; j < cols; ++j) x[(rows / 2) * ld + 1 + j] = 0.0f;  // one all-zero row
    std::vector<float> cpu = x;
    ops::l2_rows_cpu({f32_view(cpu.data() + 1, ld), rows, cols}, pool);
    DeviceArray<float> dx(x);
    ops::l2_rows_cuda({f32_view(dx.get() + 1, ld), rows, cols}, nullptr);
    EXPECT_LE(rel_error(dx.download(), cpu), kTol) << "rows " << rows;
  }
}

}  // namespace
}  // namespace il::test
