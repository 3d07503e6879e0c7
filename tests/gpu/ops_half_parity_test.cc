// The f16 and bf16 kernels against the CPU ops (f32) at odd sizes, strided windows and ragged
// batches. Inputs are rounded to the storage type once and the CPU op gets the same rounded
// values, so the error measured is the kernel's own: f32 math inside, one rounding of the
// output (two where an activation follows the GEMM's rounded, biased sum). Tolerance: max-abs
// error ≤ 4 unit roundoffs of the type relative to the output's scale (f16 1.95e-3, bf16
// 1.56e-2); pooling writes f32 from the rounded inputs and keeps the f32 parity class (1e-4).
#include <gtest/gtest.h>

#include <cmath>

#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "half_test_util.h"
#include "ops/attention.h"
#include "ops/embed.h"
#include "ops/gemm_cuda.h"
#include "ops/gemm_packed.h"
#include "ops/layernorm.h"
#include "ops/ops_cuda.h"
#include "ops/pool.h"
#include "../unit/reference.h"

namespace il::test {
namespace {

constexpr double kUlps = 4.0;
constexpr double kF32Tol = 1e-4;
const std::vector<std::size_t> kRows = {1, 7, 97, 257, 1025};

class HalfOps : public ::testing::TestWithParam<DType> {
 protected:
  double tol() const { return kUlps * unit_roundoff(GetParam()); }
};

TEST_P(HalfOps, ConversionRoundsOnce) {
  IL_REQUIRE_GPU();
  auto x = random_vector(4097, 3, 50.0f);
  x[0] = 0.0f;
  x[1] = 1.0f;
  const HalfArray h(x, GetParam());
  for (std::size_t i = 0; i < x.size(); ++i)
    ASSERT_LE(std::abs(h.rounded()[i] - x[i]), unit_roundoff(GetParam()) * std::abs(x[i]) + 1e-30) << x[i];
  EXPECT_EQ(h.rounded()[1], 1.0f);
}

TEST_P(HalfOps, GemmMatchesCpuAtOddSizesActivationsAndStrides) {
  IL_REQUIRE_GPU();
  const DType t = GetParam();
  ThreadPool pool(0);
  ops::CublasLtGemm gemm;
  uint32_t seed = 1;
  for (const auto& [k, n] : {std::pair<std::size_t, std::size_t>{97, 257}, {384, 1152}, {768, 3072}, {1, 7}}) {
    const HalfArray w(random_vector(n * k, seed++, 0.2f), t), bias(random_vector(n, seed++, 0.5f), t);
    const ops::PackedWeight packed(w.rounded().data(), n, k);
    for (std::size_t m : kRows)
      for (bool strided : {false, true}) {
        // Strided: windows at odd column offsets of wider buffers (2-byte aligned only).
        const std::size_t x_off = strided ? 3 : 0, ldx = strided ? k + 5 : k;
        const std::size_t y_off = strided ? 1 : 0, ldy = strided ? n + 3 : n;
        const HalfArray x(random_vector(m * ldx, seed++, 1.0f), t);
        for (Activation act : {Activation::kNone, Activation::kGeluErf, Activation::kGeluTanh})
          for (bool with_bias : {false, true}) {
            std::vector<float> y_cpu(m * ldy, 0.5f);
            const HalfArray y(y_cpu, t);
            ops::gemm_packed_cpu({ops::f32_view(x.rounded().data() + x_off, ldx), &packed,
                                  ops::f32_view(with_bias ? bias.rounded().data() : nullptr),
                                  ops::f32_view(y_cpu.data() + y_off, ldy), m, act},
                                 pool);
            gemm.run({x.view(x_off, ldx), w.view(0, k), with_bias ? bias.view() : ops::TensorView{}, y.view(y_off, ldy),
                      m, n, k, act},
                     nullptr);
            EXPECT_LE(rel_error(y.download(), y_cpu), tol())
                << type_name(t) << " m=" << m << " k=" << k << " n=" << n << " act=" << activation_name(act)
                << " bias=" << with_bias << " strided=" << strided;
          }
      }
  }
}

// The few-row kernel in f16 / bf16 (see the f32 test in ops_gemm_norm_parity_test.cc).
TEST_P(HalfOps, SkinnyGemmMatchesCpuForFewRows) {
  IL_REQUIRE_GPU();
  const DType t = GetParam();
  ThreadPool pool(0);
  uint32_t seed = 600;
  for (const auto& [k, n] : {std::pair<std::size_t, std::size_t>{8, 1}, {96, 3}, {768, 257}, {3072, 768}}) {
    const HalfArray w(random_vector(n * k, seed++, 0.2f), t), bias(random_vector(n, seed++, 0.5f), t);
    const ops::PackedWeight packed(w.rounded().data(), n, k);
    for (std::size_t m : {1, 2, 3, 5, 8, 9, 16}) {
      const std::size_t ldy = n + 3;
      const HalfArray x(random_vector(m * k, seed++, 1.0f), t);
      for (Activation act : {Activation::kNone, Activation::kGeluErf, Activation::kTanh})
        for (bool with_bias : {false, true}) {
          std::vector<float> y_cpu(m * ldy, 0.5f);
          const HalfArray y(y_cpu, t);
          ops::gemm_packed_cpu({ops::f32_view(x.rounded().data(), k), &packed,
                                ops::f32_view(with_bias ? bias.rounded().data() : nullptr),
                                ops::f32_view(y_cpu.data() + 1, ldy), m, act},
                               pool);
          const ops::GemmCudaArgs args{x.view(0, k), w.view(0, k), with_bias ? bias.view() : ops::TensorView{},
                                       y.view(1, ldy), m, n, k, act};
          ASSERT_TRUE(ops::skinny_gemm_applies(args));
          ops::skinny_gemm_cuda(args, nullptr);
          EXPECT_LE(rel_error(y.download(), y_cpu), tol())
              << type_name(t) << " m=" << m << " k=" << k << " n=" << n << " act=" << activation_name(act)
              << " bias=" << with_bias;
        }
    }
  }
}

TEST_P(HalfOps, FallbackGemmMatchesCpu) {
  IL_REQUIRE_GPU();
  const DType t = GetParam();
  ThreadPool pool(0);
  uint32_t seed = 900;
  for (const auto& [k, n] : {std::pair<std::size_t, std::size_t>{97, 257}, {1, 7}, {384, 33}})
    for (std::size_t m : kRows) {
      const std::size_t ldx = k + 5, ldy = n + 3;
      const HalfArray w(random_vector(n * k, seed++, 0.2f), t), x(random_vector(m * ldx, seed++, 1.0f), t);
      const ops::PackedWeight packed(w.rounded().data(), n, k);
      std::vector<float> y_cpu(m * ldy, 0.5f);
      const HalfArray y(y_cpu, t);
      ops::gemm_packed_cpu({ops::f32_view(x.rounded().data() + 3, ldx), &packed, {}, ops::f32_view(y_cpu.data() + 1, ldy),
                            m, Activation::kNone},
                           pool);
      ops::gemm_fallback_cuda({x.view(3, ldx), w.view(0, k), {}, y.view(1, ldy), m, n, k, Activation::kNone}, nullptr);
      EXPECT_LE(rel_error(y.download(), y_cpu), tol()) << type_name(t) << " m=" << m << " k=" << k << " n=" << n;
    }
}

TEST_P(HalfOps, LayerNormMatchesCpuWithResidualAndAliasing) {
  IL_REQUIRE_GPU();
  const DType t = GetParam();
  ThreadPool pool(0);
  uint32_t seed = 100;
  // Windows at odd offsets take the block kernel; dense rows of a multiple of 8 columns the
  // warp-per-row vector kernel up to 2048 columns (the block kernel beyond).
  for (std::size_t cols : {1, 7, 97, 384, 768, 1024, 1025, 2048, 2056})
    for (std::size_t rows : kRows)
      for (bool rms : {false, true})
        for (bool dense : {false, true}) {
          if (dense && cols % 8 != 0) continue;
          const std::size_t ldx = dense ? cols : cols + 3, ldr = dense ? cols : cols + 1, x_off = dense ? 0 : 1;
          auto xv = random_vector(rows * ldx, seed++, 3.0f);
          for (float& v : xv) v += 2.0f;  // an offset mean, so centring matters
          const HalfArray x(xv, t), res(random_vector(rows * ldr, seed++, 1.0f), t);
          auto w = random_vector(cols, seed++, 0.3f);
          for (float& v : w) v += 1.0f;
          const auto b = random_vector(cols, seed++, 0.3f);
          // Out written over the residual (the executor's residual stream does this).
          std::vector<float> cpu = res.rounded();
          ops::layernorm_cpu({ops::f32_view(x.rounded().data() + x_off, ldx), ops::f32_view(cpu.data(), ldr), w.data(),
                              rms ? nullptr : b.data(), ops::f32_view(cpu.data(), ldr), rows, cols, 1e-5f, rms},
                             pool);
          DeviceArray<float> dw(w), db(b);
          ops::layernorm_cuda({x.view(x_off, ldx), res.view(0, ldr), dw.get(), rms ? nullptr : db.get(), res.view(0, ldr),
                               rows, cols, 1e-5f, rms},
                              nullptr);
          EXPECT_LE(rel_error(res.download(), cpu), tol())
              << type_name(t) << " rows=" << rows << " cols=" << cols << " rms=" << rms << " dense=" << dense;
        }
}

TEST_P(HalfOps, AttentionMatchesCpuOnRaggedBatches) {
  IL_REQUIRE_GPU();
  const DType t = GetParam();
  using ops::MaskMode;
  const AttnCase cases[] = {{kMixedLengths, 12, 12, 64, MaskMode::kBidirectional, 0},
                            {kMixedLengths, 4, 2, 32, MaskMode::kCausal, 0},
                            {kMixedLengths, 6, 1, 80, MaskMode::kBidirectional, 128},
                            {{257, 3, 1000}, 2, 1, 256, MaskMode::kBidirectional, 0},
                            {{300, 41, 1}, 4, 4, 128, MaskMode::kCausal, 63},
                            {{1, 2, 3, 5, 8, 13}, 6, 3, 7, MaskMode::kCausal, 5}};
  ThreadPool pool(0);
  uint32_t seed = 42;
  for (const AttnCase& c : cases) {
    const auto starts = starts_of(c.lengths);
    std::size_t longest = 0;
    for (int32_t l : c.lengths) longest = std::max<std::size_t>(longest, static_cast<std::size_t>(l));
    const std::size_t total = static_cast<std::size_t>(starts.back());
    const std::size_t qw = c.heads * c.head_dim, kvw = c.kv_heads * c.head_dim, ld = qw + 2 * kvw, ldo = qw + 3;
    const HalfArray qkv(random_vector(total * ld, seed++, 1.5f), t);
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    std::vector<float> cpu(total * ldo, -0.75f);
    const HalfArray out(cpu, t);
    const float* p = qkv.rounded().data();
    ops::attention_cpu({p, ld, p + qw, ld, p + qw + kvw, ld, cpu.data() + 1, ldo, starts.data(), c.lengths.size(),
                        c.heads, c.kv_heads, c.head_dim, scale, c.mask, c.window},
                       pool);
    DeviceArray<int32_t> dstarts(starts);
    ops::attention_cuda(attention_args(qkv.view(0, ld), qkv.view(qw, ld), qkv.view(qw + kvw, ld), out.view(1, ldo),
                                       dstarts.get(), c.lengths.size(), c.heads, c.kv_heads, c.head_dim, scale, c.mask,
                                       c.window, longest),
                        nullptr);
    EXPECT_LE(rel_error(out.download(), cpu), tol())
        << type_name(t) << " heads " << c.heads << "/" << c.kv_heads << " head_dim " << c.head_dim;
  }
}

TEST_P(HalfOps, EmbedMatchesCpuAndZeroesPaddingTokens) {
  IL_REQUIRE_GPU();
  const DType t = GetParam();
  ThreadPool pool(0);
  const std::size_t cols = 97, ldo = cols + 4, vocab = 50, max_pos = 1100, offset = 2, padding = 9;
  const std::vector<int32_t> lengths = {1, 5, 0, 1000, 17, 300};
  const auto starts = starts_of(lengths);
  const std::size_t total = static_cast<std::size_t>(starts.back());
  std::vector<int32_t> tokens(total + padding, 0), types(total + padding, 0);
  for (std::size_t i = 0; i < total; ++i) {
    tokens[i] = static_cast<int32_t>((i * 7 + 3) % vocab);
    types[i] = static_cast<int32_t>(i % 2);
  }
  const HalfArray word(random_vector(vocab * cols, 21), t), pos(random_vector(max_pos * cols, 22), t),
      type(random_vector(2 * cols, 23), t);
  std::vector<float> cpu((total + padding) * ldo, -0.75f);
  const HalfArray out(cpu, t);
  ops::embed_cpu({tokens.data(), types.data(), starts.data(), lengths.size(), ops::f32_view(word.rounded().data()),
                  ops::f32_view(pos.rounded().data()), offset, ops::f32_view(type.rounded().data()),
                  ops::f32_view(cpu.data() + 1, ldo), cols},
                 pool);
  // The launch covers `padding` tokens past the batch (a graph bucket): their rows must be zero.
  for (std::size_t r = total; r < total + padding; ++r)
    for (std::size_t j = 0; j < cols; ++j) cpu[r * ldo + 1 + j] = 0.0f;
  DeviceArray<int32_t> dtok(tokens), dtypes(types), dstarts(starts);
  ops::embed_cuda({dtok.get(), dtypes.get(), dstarts.get(), lengths.size(), word.view(), pos.view(), offset,
                   type.view(), out.view(1, ldo), cols},
                  total + padding, nullptr);
  EXPECT_LE(rel_error(out.download(), cpu), tol()) << type_name(t);
}

TEST_P(HalfOps, PoolAndL2MatchCpu) {
  IL_REQUIRE_GPU();
  const DType t = GetParam();
  ThreadPool pool(0);
  const std::vector<int32_t> lengths = {1, 0, 7, 1000, 97, 2, 257};
  const auto starts = starts_of(lengths);
  const std::size_t total = static_cast<std::size_t>(starts.back()), cols = 768, ldx = cols + 2;
  auto xv = random_vector(total * ldx, 31, 2.0f);
  for (float& v : xv) v += 1.0f;
  const HalfArray x(xv, t);
  DeviceArray<int32_t> dstarts(starts);
  for (PoolingMode mode : {PoolingMode::kMean, PoolingMode::kCls, PoolingMode::kLastToken}) {
    std::vector<float> cpu(lengths.size() * cols, 0.5f);
    ops::pool_cpu({ops::f32_view(x.rounded().data() + 1, ldx), ops::f32_view(cpu.data(), cols), starts.data(),
                   lengths.size(), cols, mode},
                  pool);
    DeviceArray<float> dout(std::vector<float>(lengths.size() * cols, 0.5f));
    ops::pool_cuda({x.view(1, ldx), ops::f32_view(dout.get(), cols), dstarts.get(), lengths.size(), cols, mode},
                   nullptr);
    EXPECT_LE(rel_error(dout.download(), cpu), kF32Tol) << type_name(t) << " mode " << pooling_name(mode);
  }
  for (std::size_t rows : kRows) {
    const std::size_t ld = 384 + 3;
    const HalfArray h(random_vector(rows * ld, 41, 3.0f), t);
    std::vector<float> cpu = h.rounded();
    ops::l2_rows_cpu({ops::f32_view(cpu.data() + 1, ld), rows, 384}, pool);
    ops::l2_rows_cuda({h.view(1, ld), rows, 384}, nullptr);
    EXPECT_LE(rel_error(h.download(), cpu), tol()) << type_name(t) << " rows " << rows;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, HalfOps, ::testing::Values(DType::kF16, DType::kBF16),
                         [](const auto& info) { return info.param == DType::kF16 ? std::string("f16") : "bf16"; });

}  // namespace
}  // namespace il::test
