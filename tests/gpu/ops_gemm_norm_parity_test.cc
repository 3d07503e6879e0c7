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

using ops::f32_view;

struct GemmShape {
  std::size_t k, n;
};

TEST(GpuGemm, MatchesCpuAtOddSizesActivationsAndStrides) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  ops::CublasLtGemm gemm;
  const Activation acts[] = {Activation::kNone, Activation::kGeluErf, Activation::kGeluTanh,
                             Activation::kSilu, Activation::kRelu, Activation::kTanh, Activation::kQuickGelu};
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
            ops::gemm_packed_cpu({f32_view(x.data() + x_off, ldx), &packed, f32_view(with_bias ? bias.data() : nullptr),
                                  f32_view(y_cpu.data() + y_off, ldy), m, act},
                                 pool);
            gemm.run({f32_view(dx.get() + x_off, ldx), f32_view(dw.get(), sh.k),
                      f32_view(with_bias ? dbias.get() : nullptr), f32_view(dy.get() + y_off, ldy), m, sh.n, sh.k, act},
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
      ops::gemm_packed_cpu({f32_view(x.data() + 3, ldx), &packed, {}, f32_view(y_cpu.data() + 1, ldy), m,
                            Activation::kNone},
                           pool);
      DeviceArray<float> dx(x), dw(w), dy(std::vector<float>(m * ldy, kSentinel));
      ops::gemm_fallback_cuda({f32_view(dx.get() + 3, ldx), f32_view(dw.get(), sh.k), {}, f32_view(dy.get() + 1, ldy),
                               m, sh.n, sh.k, Activation::kNone},
                              nullptr);
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
                             Activation::kRelu, Activation::kTanh, Activation::kQuickGelu})
        for (bool with_bias : {false, true})
          for (bool direct : {false, true}) {
            std::vector<float> y_cpu(m * ldy, kSentinel);
            DeviceArray<float> dy(y_cpu);
            ops::gemm_packed_cpu({f32_view(x.data(), sh.k), &packed, f32_view(with_bias ? bias.data() : nullptr),
                                  f32_view(y_cpu.data() + 1, ldy), m, act},
                                 pool);
            const ops::GemmCudaArgs args{f32_view(dx.get(), sh.k), f32_view(dw.get(), sh.k),
                                         f32_view(with_bias ? dbias.get() : nullptr), f32_view(dy.get() + 1, ldy), m,
                                         sh.n, sh.k, act};
            ASSERT_TRUE(ops::skinny_gemm_applies(args));
            ASSERT_TRUE(ops::gemm_kernel_supports(ops::GemmKernel::kSkinny, args));
            EXPECT_EQ(gemm.kernel_for(args), ops::GemmKernel::kSkinny);
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
  // 33 columns in rows of 40 take the element kernel; 1000 and 3072 in dense rows the vector
  // one, or without a bias the flat one. Every kernel that supports a case runs it.
  struct Layout {
    std::size_t rows, cols, ld;
  };
  using ops::BiasActivationKernel;
  for (const Layout& s : {Layout{97, 33, 40}, Layout{97, 1000, 1000}, Layout{7, 3072, 3072}, Layout{1, 4, 4}}) {
    const auto y0 = random_vector(s.rows * s.ld, 5, 4.0f);
    const auto bias = random_vector(s.cols, 6, 1.0f);
    DeviceArray<float> dbias(bias);
    for (bool with_bias : {true, false})
      for (Activation act : {Activation::kNone, Activation::kGeluErf, Activation::kGeluTanh, Activation::kSilu,
                             Activation::kRelu, Activation::kTanh, Activation::kQuickGelu}) {
        std::vector<float> cpu = y0;
        for (std::size_t r = 0; r < s.rows; ++r)
          for (std::size_t c = 0; c < s.cols; ++c)
            cpu[r * s.ld + c] = static_cast<float>(activation_ref(act, y0[r * s.ld + c] + (with_bias ? bias[c] : 0.0f)));
        DeviceArray<float> dy(y0);
        const ops::BiasActivationArgs args{f32_view(dy.get(), s.ld), f32_view(with_bias ? dbias.get() : nullptr),
                                           s.rows, s.cols, act};
        const BiasActivationKernel want = s.ld != s.cols ? BiasActivationKernel::kElement
                                          : with_bias    ? BiasActivationKernel::kVector
                                                         : BiasActivationKernel::kFlat;
        EXPECT_EQ(ops::choose_bias_activation_kernel(args), want) << "cols=" << s.cols << " bias=" << with_bias;
        for (BiasActivationKernel k :
             {BiasActivationKernel::kFlat, BiasActivationKernel::kVector, BiasActivationKernel::kElement}) {
          if (!ops::bias_activation_kernel_supports(k, args)) continue;
          IL_CUDA_CHECK(cudaMemcpy(dy.get(), y0.data(), y0.size() * sizeof(float), cudaMemcpyHostToDevice));
          ops::bias_activation_launch_cuda(k, args, nullptr);
          EXPECT_LE(rel_error(dy.download(), cpu), kTol)
              << ops::bias_activation_kernel_name(k) << " " << activation_name(act) << " cols=" << s.cols
              << " bias=" << with_bias;
        }
        IL_CUDA_CHECK(cudaMemcpy(dy.get(), y0.data(), y0.size() * sizeof(float), cudaMemcpyHostToDevice));
        ops::bias_activation_cuda(args, nullptr);
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
          ops::layernorm_cpu({f32_view(x.data() + 1, ldx), f32_view(residual ? res.data() : nullptr, ldr), w.data(),
                              bias, f32_view(out_cpu.data() + 2, ldo), rows, cols, 1e-5f, rms},
                             pool);
          DeviceArray<float> dx(x), dres(res), dw(w), db(b);
          DeviceArray<float> dout(std::vector<float>(rows * ldo, kSentinel));
          ops::layernorm_cuda({f32_view(dx.get() + 1, ldx), f32_view(residual ? dres.get() : nullptr, ldr), dw.get(),
                               rms ? nullptr : db.get(), f32_view(dout.get() + 2, ldo), rows, cols, 1e-5f, rms},
                              nullptr);
          const auto out_gpu = dout.download();
          EXPECT_LE(rel_error(out_gpu, out_cpu), kTol)
              << "rows=" << rows << " cols=" << cols << " rms=" << rms << " residual=" << residual;
        }
}

// Dense rows of a multiple of 4 columns take the warp-per-row vector kernel up to 1024 f32
// columns and the block kernel beyond: the choice, and every kernel that supports a case (the
// block kernel supports all), with and without residual and bias.
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
          ops::layernorm_cpu({f32_view(x.data(), cols), f32_view(residual ? res.data() : nullptr, cols), w.data(),
                              rms ? nullptr : b.data(), f32_view(out_cpu.data(), cols), rows, cols, 1e-5f, rms},
                             pool);
          DeviceArray<float> dx(x), dres(res), dw(w), db(b);
          DeviceArray<float> dout(std::vector<float>(rows * cols, kSentinel));
          const ops::LayerNormArgs args{f32_view(dx.get(), cols), f32_view(residual ? dres.get() : nullptr, cols),
                                        dw.get(), rms ? nullptr : db.get(), f32_view(dout.get(), cols), rows, cols,
                                        1e-5f, rms};
          EXPECT_EQ(ops::choose_layernorm_kernel(args),
                    cols <= 1024 ? ops::LayerNormKernel::kWarp : ops::LayerNormKernel::kBlock)
              << "cols=" << cols;
          for (ops::LayerNormKernel k : {ops::LayerNormKernel::kWarp, ops::LayerNormKernel::kBlock}) {
            if (!ops::layernorm_kernel_supports(k, args)) continue;
            IL_CUDA_CHECK(cudaMemset(dout.get(), 0, rows * cols * sizeof(float)));
            ops::layernorm_launch_cuda(k, args, nullptr);
            EXPECT_LE(rel_error(dout.download(), out_cpu), kTol)
                << ops::layernorm_kernel_name(k) << " rows=" << rows << " cols=" << cols << " rms=" << rms
                << " residual=" << residual;
          }
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
    ops::layernorm_cpu({f32_view(cx.data(), cols), f32_view(cr.data(), cols), w.data(), b.data(),
                        f32_view(cpu_out, cols), rows, cols, 1e-12f, false},
                       pool);
    DeviceArray<float> dx(x), dr(res), dw(w), db(b);
    float* gpu_out = into_x ? dx.get() : dr.get();
    ops::layernorm_cuda({f32_view(dx.get(), cols), f32_view(dr.get(), cols), dw.get(), db.get(), f32_view(gpu_out, cols),
                         rows, cols, 1e-12f, false},
                        nullptr);
    const auto got = (into_x ? dx : dr).download();
    const auto& want = into_x ? cx : cr;
    EXPECT_LE(rel_error(got, want), kTol) << (into_x ? "out = x" : "out = residual");
  }
}

}  // namespace
}  // namespace il::test
