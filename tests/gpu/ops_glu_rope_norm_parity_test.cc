// The ops a decoder-style layer adds (Qwen3: gated MLP, rotary embeddings, RMSNorm keeping the
// residual sum, per-head q / k norms) on CUDA against the CPU ops, in every element type, at odd
// sizes and on strided views (q and k inside a fused QKV buffer), with the aliasing the models
// use. f16 / bf16 inputs are rounded once and the CPU op gets the same rounded values, so what is
// measured is the kernel's own error: f32 math, one rounding of each output. Tolerances: f32
// 1e-4 of the output's scale (rope: 1e-6, as its angles are the CPU's bit for bit), f16 / bf16
// 4 unit roundoffs of the type (as ops_half_parity_test.cc). Columns outside a view must keep
// their values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "half_test_util.h"
#include "ops/glu.h"
#include "ops/layernorm.h"
#include "ops/ops_cuda.h"
#include "ops/rope.h"
#include "../unit/reference.h"

namespace il::test {
namespace {

constexpr float kSentinel = 0.75f;
const std::vector<std::size_t> kRows = {1, 7, 97, 257, 1025};

class GluRopeNorm : public ::testing::TestWithParam<DType> {
 protected:
  DType type() const { return GetParam(); }
  double tol(double f32_tol = 1e-4) const { return type() == DType::kF32 ? f32_tol : 4.0 * unit_roundoff(type()); }
};

TEST_P(GluRopeNorm, GluMatchesCpuAtOddSizesStridesAndInPlace) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  uint32_t seed = 40;
  double worst = 0.0;
  for (std::size_t n : {1, 7, 96, 97, 1536})
    for (std::size_t rows : kRows)
      for (int layout = 0; layout < 3; ++layout) {
        // 0: dense rows (the vector kernel where n allows); 1: windows at odd offsets of wider
        // buffers; 2: in place, out = x's first n columns (as a model may write it).
        const std::size_t x_off = layout == 1 ? 3 : 0, ldx = layout == 1 ? 2 * n + 5 : 2 * n;
        const std::size_t o_off = layout == 1 ? 1 : 0, ldo = layout == 2 ? ldx : layout == 1 ? n + 3 : n;
        const TypedArray x(random_vector(rows * ldx, seed++, 3.0f), type());
        for (Activation act : {Activation::kSilu, Activation::kGeluErf, Activation::kGeluTanh, Activation::kRelu,
                               Activation::kNone, Activation::kTanh}) {
          std::vector<float> cpu_x = x.values();
          std::vector<float> cpu_out(rows * ldo, kSentinel);
          float* cpu_dst = layout == 2 ? cpu_x.data() : cpu_out.data() + o_off;
          ops::glu_cpu({ops::f32_view(cpu_x.data() + x_off, ldx), ops::f32_view(cpu_dst, ldo), rows, n, act}, pool);
          // The chosen kernel (glu_cuda), then every kernel that supports the layout: the vector
          // one for dense rows of whole vectors, the element one everywhere.
          for (int run = 0; run < 3; ++run) {
            const TypedArray gx(x.values(), type()), gout(std::vector<float>(rows * ldo, kSentinel), type());
            const ops::GluArgs args{gx.view(x_off, ldx), layout == 2 ? gx.view(0, ldo) : gout.view(o_off, ldo), rows,
                                    n, act};
            const ops::GluKernel k = run == 1 ? ops::GluKernel::kVector : ops::GluKernel::kElement;
            if (run == 0) {
              const bool whole_vectors = x_off == 0 && o_off == 0 && n % (16 / dtype_size(type())) == 0;
              EXPECT_EQ(ops::choose_glu_kernel(args), whole_vectors ? ops::GluKernel::kVector : ops::GluKernel::kElement)
                  << "n=" << n << " layout=" << layout;
              ops::glu_cuda(args, nullptr);
            } else {
              if (!ops::glu_kernel_supports(k, args)) continue;
              ops::glu_launch_cuda(k, args, nullptr);
            }
            const double err =
                layout == 2 ? rel_error(gx.download(), cpu_x) : rel_error(gout.download(), cpu_out);
            worst = std::max(worst, err);
            EXPECT_LE(err, tol()) << type_name(type()) << " n=" << n << " rows=" << rows << " layout=" << layout
                                  << " act=" << activation_name(act) << " run " << run;
          }
        }
      }
  std::printf("[glu] %s: worst error %.3g (tolerance %.3g)\n", type_name(type()).c_str(), worst, tol());
}

// Rotary embeddings on q and k inside a fused QKV buffer (the model's layout: q heads, then k,
// then v), at positions up to 4095 in a ragged order, head dims 24 / 64 / 128 (and a partial
// rotary_dim), theta 1e4 and 1e6, rotate-half and interleaved pairs (nomic-bert's
// rotary_emb_interleaved, with nomic-embed's theta 1e3 and a half-width rotary_dim of 6). v and
// the columns past each rotary_dim stay as they were.
TEST_P(GluRopeNorm, RopeMatchesCpuOnStridedViewsAtLargePositions) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  struct Case {
    std::size_t heads, kv_heads, head_dim, rotary_dim;
    float theta;
  };
  uint32_t seed = 70;
  double worst = 0.0;
  for (const bool interleaved : {false, true})
  for (const Case& c : {Case{4, 2, 24, 24, 1e6f}, Case{16, 8, 128, 128, 1e6f}, Case{12, 12, 64, 64, 1e4f},
                        Case{6, 2, 64, 32, 1e4f}, Case{3, 1, 128, 128, 5e5f}, Case{4, 4, 12, 6, 1e3f}})
    for (std::size_t rows : {1, 97, 1025, 4096}) {
      const std::size_t qw = c.heads * c.head_dim, kvw = c.kv_heads * c.head_dim, ld = qw + 2 * kvw;
      std::vector<int32_t> positions(rows);
      for (std::size_t r = 0; r < rows; ++r)  // every position below 4096 once at 4096 rows, shuffled
        positions[r] = static_cast<int32_t>((r * 2654435761u + seed) % 4096);
      if (rows > 1) positions[rows - 1] = 4095;
      DeviceArray<int32_t> dpos(positions);
      const TypedArray buf(random_vector(rows * ld, seed++, 2.0f), type());
      std::vector<float> cpu = buf.values();
      for (const auto& [col, heads] : {std::pair{std::size_t{0}, c.heads}, std::pair{qw, c.kv_heads}})
        ops::rope_cpu({ops::f32_view(cpu.data() + col, ld), positions.data(), rows, heads, c.head_dim, c.rotary_dim,
                       c.theta, interleaved},
                      pool);
      for (const auto& [col, heads] : {std::pair{std::size_t{0}, c.heads}, std::pair{qw, c.kv_heads}})
        ops::rope_cuda({buf.view(col, ld), dpos.get(), rows, heads, c.head_dim, c.rotary_dim, c.theta, interleaved},
                       nullptr);
      const double err = rel_error(buf.download(), cpu);
      worst = std::max(worst, err);
      EXPECT_LE(err, tol(1e-6)) << type_name(type()) << " heads " << c.heads << "/" << c.kv_heads << " head_dim "
                                << c.head_dim << " rotary " << c.rotary_dim << " rows " << rows << " interleaved "
                                << interleaved;
    }
  std::printf("[rope] %s: worst error %.3g (tolerance %.3g)\n", type_name(type()).c_str(), worst, tol(1e-6));
}

// The rope step with the q / k RMS norms fused in (RopeArgs::norm_first / norm_rest, Qwen3's and
// LFM2's attention): q and k heads of a fused QKV row normalised with their own weights, then
// turned, against the CPU op. The CUDA kernel rounds each normalised value to the element type
// before turning it (as the separate norm step stores it), so f16 / bf16 carry one more rounding
// than the CPU's f32 path: still inside 4 unit roundoffs. v must keep its values.
TEST_P(GluRopeNorm, RopeWithHeadNormMatchesCpu) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  struct Case {
    std::size_t heads, kv_heads, head_dim, rotary_dim;
  };
  uint32_t seed = 150;
  double worst = 0.0;
  for (const bool interleaved : {false, true})
    for (const Case& c : {Case{16, 8, 128, 128}, Case{4, 2, 24, 24}, Case{12, 12, 64, 64}, Case{6, 2, 64, 32},
                          Case{3, 1, 14, 12}})
      for (std::size_t rows : {1, 16, 97, 1025}) {
        const std::size_t qw = c.heads * c.head_dim, kvw = c.kv_heads * c.head_dim, ld = qw + 2 * kvw + 1;
        std::vector<int32_t> positions(rows);
        for (std::size_t r = 0; r < rows; ++r) positions[r] = static_cast<int32_t>((r * 2654435761u + seed) % 4096);
        DeviceArray<int32_t> dpos(positions);
        auto wq = random_vector(c.head_dim, seed++, 0.4f), wk = random_vector(c.head_dim, seed++, 0.4f);
        for (float& v : wq) v += 1.0f;
        for (float& v : wk) v += 0.8f;
        DeviceArray<float> dwq(wq), dwk(wk);
        const TypedArray buf(random_vector(rows * ld, seed++, 3.0f), type());
        std::vector<float> cpu = buf.values();
        ops::RopeArgs a{ops::f32_view(cpu.data(), ld), positions.data(), rows, c.heads + c.kv_heads, c.head_dim,
                        c.rotary_dim, 1e6f, interleaved};
        a.norm_first = wq.data();
        a.norm_rest = wk.data();
        a.norm_split = c.heads;
        a.norm_eps = 1e-6f;
        ops::rope_cpu(a, pool);
        a.x = buf.view(0, ld);
        a.positions = dpos.get();
        a.norm_first = dwq.get();
        a.norm_rest = dwk.get();
        ops::rope_cuda(a, nullptr);
        const double err = rel_error(buf.download(), cpu);
        worst = std::max(worst, err);
        EXPECT_LE(err, tol()) << type_name(type()) << " heads " << c.heads << "/" << c.kv_heads << " head_dim "
                              << c.head_dim << " rotary " << c.rotary_dim << " rows " << rows << " interleaved "
                              << interleaved;
      }
  std::printf("[rope with q / k norms] %s: worst error %.3g (tolerance %.3g)\n", type_name(type()).c_str(), worst,
              tol());
}

// Multi-axis rotary (M-RoPE / 2-D rope, ops/rope.h sections) on q and k inside a fused QKV
// buffer: GLM-OCR's text decoder form (sections 8 / 12 / 12 over three axes, interleaved, 64 of
// 128 columns, freq_dim 64) and its vision form (16 / 16 over two axes, rotate-half, restarting,
// freq_dim 32), plus an odd form (sections 3 / 1 / 2 of a rotary_dim 12 in head_dim 14, the axis
// stride past the rows as the CUDA executor's bucketed upload leaves it). Each axis holds its own
// ragged positions so a wrong axis would show. f32 as tight as the single-axis rope (the angles
// are the CPU's bit for bit).
TEST_P(GluRopeNorm, MultiAxisRopeMatchesCpu) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  struct Case {
    std::size_t heads, kv_heads, head_dim, rotary_dim, freq_dim;
    std::vector<int> sections;
    bool interleaved, restart;
  };
  uint32_t seed = 90;
  double worst = 0.0;
  const std::vector<Case> cases = {Case{4, 2, 128, 64, 64, {8, 12, 12}, true, false},
                                   Case{3, 3, 64, 64, 32, {16, 16}, false, true},
                                   Case{5, 1, 14, 12, 0, {3, 1, 2}, false, false},
                                   Case{5, 1, 14, 12, 8, {3, 1, 2}, true, true}};
  for (const Case& c : cases)
    for (std::size_t rows : {1, 7, 97, 1025}) {
      const std::size_t qw = c.heads * c.head_dim, kvw = c.kv_heads * c.head_dim, ld = qw + 2 * kvw;
      const std::size_t stride = rows + (rows % 3), axes = c.sections.size();
      std::vector<int32_t> positions(axes * stride, 0);
      for (std::size_t a = 0; a < axes; ++a)
        for (std::size_t r = 0; r < rows; ++r)
          positions[a * stride + r] = static_cast<int32_t>((r * 2654435761u + seed + 977 * a) % 4096);
      DeviceArray<int32_t> dpos(positions);
      const TypedArray buf(random_vector(rows * ld, seed++, 2.0f), type());
      std::vector<float> cpu = buf.values();
      for (const auto& [col, heads] : {std::pair{std::size_t{0}, c.heads}, std::pair{qw, c.kv_heads}}) {
        ops::RopeArgs a{ops::f32_view(cpu.data() + col, ld), positions.data(), rows, heads, c.head_dim, c.rotary_dim,
                        1e4f, c.interleaved};
        a.sections = c.sections;
        a.sections_restart = c.restart;
        a.freq_dim = c.freq_dim;
        a.axis_stride = stride;
        ops::rope_cpu(a, pool);
        a.x = buf.view(col, ld);
        a.positions = dpos.get();
        ops::rope_cuda(a, nullptr);
      }
      const double err = rel_error(buf.download(), cpu);
      worst = std::max(worst, err);
      EXPECT_LE(err, tol(1e-6)) << type_name(type()) << " head_dim " << c.head_dim << " rotary " << c.rotary_dim
                                << " sections " << axes << " rows " << rows;
    }
  std::printf("[multi-axis rope] %s: worst error %.3g (tolerance %.3g)\n", type_name(type()).c_str(), worst,
              tol(1e-6));
}

// RMSNorm / LayerNorm keeping the residual sum, aliased as a pre-norm model runs it (sum_out ==
// residual, out elsewhere), and per-head norms in place on q inside a QKV buffer (group = head
// dim, out == x); odd group widths take the block kernel, aligned ones the warp kernel.
TEST_P(GluRopeNorm, LayerNormWithSumOutAndGroupsMatchesCpu) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  struct Case {
    std::size_t cols, group;
    bool rms, bias;
  };
  uint32_t seed = 200;
  double worst = 0.0;
  for (const Case& c : {Case{64, 0, true, false}, Case{1024, 0, true, false}, Case{97, 0, false, true},
                        Case{4096, 0, true, false}, Case{96, 24, true, false}, Case{2048, 128, true, false},
                        Case{21, 7, true, false}, Case{192, 64, false, true}})
    for (std::size_t rows : kRows) {
      const std::size_t n = c.group ? c.group : c.cols;
      auto w = random_vector(n, seed++, 0.3f);
      for (float& v : w) v += 1.0f;
      const auto b = random_vector(n, seed++, 0.3f);
      DeviceArray<float> dw(w), db(b);
      const float* cb = c.bias ? b.data() : nullptr;
      const float* gb = c.bias ? db.get() : nullptr;
      if (c.group == 0) {
        // x = a projection's output, residual = the stream (updated in place), out = normed.
        auto x0 = random_vector(rows * c.cols, seed++, 2.0f);
        for (float& v : x0) v += 0.5f;
        const TypedArray x(x0, type()), res(random_vector(rows * c.cols, seed++, 2.0f), type());
        const TypedArray out(std::vector<float>(rows * c.cols, kSentinel), type());
        std::vector<float> cpu_res = res.values(), cpu_out(rows * c.cols, kSentinel);
        ops::LayerNormArgs a{ops::f32_view(x.values().data(), c.cols), ops::f32_view(cpu_res.data(), c.cols), w.data(),
                             cb, ops::f32_view(cpu_out.data(), c.cols), rows, c.cols, 1e-6f, c.rms};
        a.sum_out = ops::f32_view(cpu_res.data(), c.cols);
        ops::layernorm_cpu(a, pool);
        ops::LayerNormArgs g{x.view(0, c.cols), res.view(0, c.cols), dw.get(), gb, out.view(0, c.cols), rows, c.cols,
                             1e-6f, c.rms};
        g.sum_out = res.view(0, c.cols);
        ops::layernorm_cuda(g, nullptr);
        const double e_out = rel_error(out.download(), cpu_out), e_sum = rel_error(res.download(), cpu_res);
        worst = std::max({worst, e_out, e_sum});
        EXPECT_LE(e_out, tol()) << type_name(type()) << " out, cols " << c.cols << " rows " << rows;
        EXPECT_LE(e_sum, tol()) << type_name(type()) << " sum, cols " << c.cols << " rows " << rows;
      } else {
        // q heads at column 0 of a wider QKV row, normalised in place head by head.
        const std::size_t ld = c.cols + 2 * c.group + (c.group % 2 ? 3 : 0);
        const TypedArray qkv(random_vector(rows * ld, seed++, 3.0f), type());
        std::vector<float> cpu = qkv.values();
        ops::LayerNormArgs a{ops::f32_view(cpu.data(), ld), {}, w.data(), cb, ops::f32_view(cpu.data(), ld), rows,
                             c.cols, 1e-6f, c.rms};
        a.group = c.group;
        ops::layernorm_cpu(a, pool);
        ops::LayerNormArgs g{qkv.view(0, ld), {}, dw.get(), gb, qkv.view(0, ld), rows, c.cols, 1e-6f, c.rms};
        g.group = c.group;
        ops::layernorm_cuda(g, nullptr);
        const double err = rel_error(qkv.download(), cpu);
        worst = std::max(worst, err);
        EXPECT_LE(err, tol()) << type_name(type()) << " group " << c.group << " of " << c.cols << " rows " << rows;
      }
    }
  std::printf("[layernorm sum_out / group] %s: worst error %.3g (tolerance %.3g)\n", type_name(type()).c_str(), worst,
              tol());
}

INSTANTIATE_TEST_SUITE_P(Types, GluRopeNorm, ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return type_name(info.param); });

}  // namespace
}  // namespace il::test
