// CUDA GEMM, bias + activation epilogues and norms against the CPU ops on random inputs: odd
// sizes, strided column windows (unaligned ones included), f32 max-abs error ≤ 1e-4 relative to
// the output's scale. Columns outside a window must stay untouched.
#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "ops/gemm_cuda.h"
#include "ops/gemm_packed.h"
#include "ops/layernorm.h"
#include "ops/ops_cuda.h"
#include "../unit/reference.h"

namespace il::test {
namespace {

constexpr double kTol = 1e-4;
constexpr float kSentinel = 0.75f;  // small: it counts in the scale the tolerance is relative to
const std::vector<std::size_t> kRows = {1, 7, 97, 257, 1025};

struct GemmShape {
  std::size_t k, n;
};

TEST(GpuGemm, MatchesCpuAtOddSizesActivationsAndStrides) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  ops::CublasLtGemm gemm;
  const Activation acts[] = {Activation::kNone, Activation::kGeluErf, Activation::kGeluTanh,
                             Activation::kSilu, Activation::kRelu, Activation::kTanh};
  uint32_t seed = 1;
  for (const GemmShape sh : {GemmShape{97, 257}, GemmShape{384, 1152}, GemmShape{1, 7}}) {
    const auto w = random_vector(sh.n * sh.k, seed++, 0.2f);
    const auto bias = random_vector(sh.n, seed++, 0.5f);
    const ops::PackedWeight packed(w.data(), sh.n, sh.k);
    DeviceArray<float> dw(w), dbias(bias);
    for (std::size_t m : kRows)
      for (bool strided : {false, true}) {
        // Strided: windows at odd column offsets of wider buffers (4-byte aligned only).
        const std::size_t x_off = strided ? 3 : 0, ldx = strided ? sh.k + 5 : sh.k;
        const std::size_t y_off = strided ? 1 : 0, ldy = strided ? sh.n + 3 : sh.n;
        const auto x = random_vector(m * ldx, seed++, 1.0f);
        DeviceArray<float> dx(x);
        for (Activation act : acts)
          for (bool with_bias : {false, true}) {
            std::vector<float> y_cpu(m * ldy, kSentinel);
            DeviceArray<float> dy(y_cpu);
            ops::gemm_packed_cpu({x.data() + x_off, ldx, &packed, with_bias ? bias.data() : nullptr,
                                  y_cpu.data() + y_off, ldy, m, act},
                                 pool);
            gemm.run({dx.get() + x_off, ldx, dw.get(), sh.n, sh.k, with_bias ? dbias.get() : nullptr,
                      dy.get() + y_off, ldy, m, act},
                     nullptr);
            const auto y_gpu = dy.download();
            EXPECT_LE(rel_error(y_gpu, y_cpu), kTol)
                << "m=" << m << " k=" << sh.k << " n=" << sh.n << " act=" << activation_name(act)
                << " bias=" << with_bias << " strided=" << strided;
          }
      }
  }
}

TEST(GpuGemm, FallbackKernelMatchesCpu) {
  IL_REQUIRE_GPU();
  // The tiled kernel runs only where cuBLASLt has no algorithm; exercise it directly.
  ThreadPool pool(0);
  uint32_t seed = 900;
  for (const GemmShape sh : {GemmShape{97, 257}, GemmShape{1, 7}, GemmShape{384, 33}})
    for (std::size_t m : kRows) {
      const std::size_t ldx = sh.k + 5, ldy = sh.n + 3;
      const auto w = random_vector(sh.n * sh.k, seed++, 0.2f);
      const auto x = random_vector(m * ldx, seed++, 1.0f);
      const ops::PackedWeight packed(w.data(), sh.n, sh.k);
      std::vector<float> y_cpu(m * ldy, kSentinel);
      ops::gemm_packed_cpu({x.data() + 3, ldx, &packed, nullptr, y_cpu.data() + 1, ldy, m, Activation::kNone}, pool);
      DeviceArray<float> dx(x), dw(w), dy(std::vector<float>(m * ldy, kSentinel));
      ops::gemm_fallback_cuda(dx.get() + 3, ldx, dw.get(), sh.n, sh.k, dy.get() + 1, ldy, m, nullptr);
      EXPECT_LE(rel_error(dy.download(), y_cpu), kTol) << "m=" << m << " k=" << sh.k << " n=" << sh.n;
    }
}

// The few-row kernel (m ≤ kSkinnyMaxRows, vector-aligned x and W), called directly and through
// CublasLtGemm::run, at row counts around its instantiations (1, 2, 4, 8, 16), column counts
// that leave partial blocks, every activation, with and without bias, y a strided window.
TEST(GpuGemm, SkinnyKernelMatchesCpuForFewRows) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  ops::CublasLtGemm gemm;
  uint32_t seed = 500;
  for (const GemmShape sh : {GemmShape{4, 1}, GemmShape{96, 3}, GemmShape{768, 257}, GemmShape{3072, 768}}) {
    const auto w = random_vector(sh.n * sh.k, seed++, 0.2f);
    const auto bias = random_vector(sh.n, seed++, 0.5f);
    const ops::PackedWeight packed(w.data(), sh.n, sh.k);
    DeviceArray<float> dw(w), dbias(bias);
    for (std::size_t m : {1, 2, 3, 5, 8, 9, 16}) {
      const std::size_t ldy = sh.n + 3;
      const auto x = random_vector(m * sh.k, seed++, 1.0f);
      DeviceArray<float> dx(x);
      for (Activation act : {Activation::kNone, Activation::kGeluErf, Activation::kGeluTanh, Activation::kSilu,
                             Activation::kRelu, Activation::kTanh})
        for (bool with_bias : {false, true})
          for (bool direct : {false, true}) {
            std::vector<float> y_cpu(m * ldy, kSentinel);
            DeviceArray<float> dy(y_cpu);
            ops::gemm_packed_cpu({x.data(), sh.k, &packed, with_bias ? bias.data() : nullptr, y_cpu.data() + 1, ldy, m, act},
                                 pool);
            const ops::GemmCudaArgs args{dx.get(), sh.k, dw.get(), sh.n, sh.k, with_bias ? dbias.get() : nullptr,
                                         dy.get() + 1, ldy, m, act};
            ASSERT_TRUE(ops::skinny_gemm_applies(args));
            if (direct) ops::skinny_gemm_cuda(args, nullptr);
            else gemm.run(args, nullptr);
            EXPECT_LE(rel_error(dy.download(), y_cpu), kTol)
                << "m=" << m << " k=" << sh.k << " n=" << sh.n << " act=" << activation_name(act) << " bias=" << with_bias
                << " direct=" << direct;
          }
    }
  }
}

TEST(GpuBiasActivation, MatchesCpuActivations) {
  IL_REQUIRE_GPU();
  // Wide inputs (scale 4) reach the tails of every activation, where approximations differ most.
  // 33 columns in rows of 40 take the scalar kernel; 1000 and 3072 in dense rows the vector one.
  struct Layout {
    std::size_t rows, cols, ld;
  };
  for (const Layout& s : {Layout{97, 33, 40}, Layout{97, 1000, 1000}, Layout{7, 3072, 3072}, Layout{1, 4, 4}}) {
    const auto y0 = random_vector(s.rows * s.ld, 5, 4.0f);
    const auto bias = random_vector(s.cols, 6, 1.0f);
    DeviceArray<float> dbias(bias);
    for (Activation act : {Activation::kNone, Activation::kGeluErf, Activation::kGeluTanh, Activation::kSilu,
                           Activation::kRelu, Activation::kTanh}) {
      std::vector<float> cpu = y0;
      for (std::size_t r = 0; r < s.rows; ++r)
        for (std::size_t c = 0; c < s.cols; ++c)
          cpu[r * s.ld + c] = static_cast<float>(activation_ref(act, y0[r * s.ld + c] + bias[c]));
      DeviceArray<float> dy(y0);
      ops::bias_activation_cuda(dy.get(), s.ld, s.rows, s.cols, dbias.get(), act, nullptr);
      EXPECT_LE(rel_error(dy.download(), cpu), kTol) << activation_name(act) << " cols=" << s.cols;
    }
  }
}

TEST(GpuLayerNorm, MatchesCpuWithResidualBiasRmsAndStrides) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  uint32_t seed = 100;
  for (std::size_t cols : {1, 7, 97, 384, 768, 1024, 1025})
    for (std::size_t rows : kRows)
      for (bool rms : {false, true})
        for (bool residual : {false, true}) {
          // Windows: x at column 1 of a cols+3 buffer, out at column 2 of a cols+5 buffer.
          const std::size_t ldx = cols + 3, ldr = cols + 1, ldo = cols + 5;
          auto x = random_vector(rows * ldx, seed++, 3.0f);
          for (float& v : x) v += 2.0f;  // an offset mean, so centring matters
          const auto res = random_vector(rows * ldr, seed++, 1.0f);
          auto w = random_vector(cols, seed++, 0.3f);
          for (float& v : w) v += 1.0f;
          const auto b = random_vector(cols, seed++, 0.3f);
          const float* bias = rms ? nullptr : b.data();
          std::vector<float> out_cpu(rows * ldo, kSentinel);
          ops::layernorm_cpu({x.data() + 1, ldx, residual ? res.data() : nullptr, ldr, w.data(), bias,
                              out_cpu.data() + 2, ldo, rows, cols, 1e-5f, rms},
                             pool);
          DeviceArray<float> dx(x), dres(res), dw(w), db(b);
          DeviceArray<float> dout(std::vector<float>(rows * ldo, kSentinel));
          ops::layernorm_cuda({dx.get() + 1, ldx, residual ? dres.get() : nullptr, ldr, dw.get(),
                               rms ? nullptr : db.get(), dout.get() + 2, ldo, rows, cols, 1e-5f, rms},
                              nullptr);
          const auto out_gpu = dout.download();
          EXPECT_LE(rel_error(out_gpu, out_cpu), kTol)
              << "rows=" << rows << " cols=" << cols << " rms=" << rms << " residual=" << residual;
        }
}

// Dense rows of a multiple of 4 columns take the warp-per-row vector kernel up to 1024 f32
// columns and the block kernel beyond: both, with and without residual and bias.
TEST(GpuLayerNorm, DenseRowsMatchCpuOnBothKernels) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  uint32_t seed = 300;
  for (std::size_t cols : {4, 96, 132, 384, 768, 1024, 1028, 4096})
    for (std::size_t rows : kRows)
      for (bool rms : {false, true})
        for (bool residual : {false, true}) {
          auto x = random_vector(rows * cols, seed++, 3.0f);
          for (float& v : x) v += 2.0f;
          const auto res = random_vector(rows * cols, seed++, 1.0f);
          auto w = random_vector(cols, seed++, 0.3f);
          for (float& v : w) v += 1.0f;
          const auto b = random_vector(cols, seed++, 0.3f);
          std::vector<float> out_cpu(rows * cols, kSentinel);
          ops::layernorm_cpu({x.data(), cols, residual ? res.data() : nullptr, cols, w.data(), rms ? nullptr : b.data(),
                              out_cpu.data(), cols, rows, cols, 1e-5f, rms},
                             pool);
          DeviceArray<float> dx(x), dres(res), dw(w), db(b);
          DeviceArray<float> dout(std::vector<float>(rows * cols, kSentinel));
          ops::layernorm_cuda({dx.get(), cols, residual ? dres.get() : nullptr, cols, dw.get(),
                               rms ? nullptr : db.get(), dout.get(), cols, rows, cols, 1e-5f, rms},
                              nullptr);
          EXPECT_LE(rel_error(dout.download(), out_cpu), kTol)
              << "rows=" << rows << " cols=" << cols << " rms=" << rms << " residual=" << residual;
        }
}

TEST(GpuLayerNorm, OutputMayAliasInputOrResidual) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  const std::size_t rows = 257, cols = 768;
  const auto x = random_vector(rows * cols, 7, 2.0f);
  const auto res = random_vector(rows * cols, 8, 2.0f);
  auto w = random_vector(cols, 9, 0.2f);
  for (float& v : w) v += 1.0f;
  const auto b = random_vector(cols, 10, 0.2f);
  for (bool into_x : {true, false}) {
    std::vector<float> cx = x, cr = res;
    float* cpu_out = into_x ? cx.data() : cr.data();
    ops::layernorm_cpu({cx.data(), cols, cr.data(), cols, w.data(), b.data(), cpu_out, cols, rows, cols, 1e-12f, false},
                       pool);
    DeviceArray<float> dx(x), dr(res), dw(w), db(b);
    float* gpu_out = into_x ? dx.get() : dr.get();
    ops::layernorm_cuda({dx.get(), cols, dr.get(), cols, dw.get(), db.get(), gpu_out, cols, rows, cols, 1e-12f, false},
                        nullptr);
    const auto got = (into_x ? dx : dr).download();
    const auto& want = into_x ? cx : cr;
    EXPECT_LE(rel_error(got, want), kTol) << (into_x ? "out = x" : "out = residual");
  }
}

}  // namespace
}  // namespace il::test
