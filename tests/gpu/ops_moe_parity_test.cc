// The mixture of experts on CUDA against the CPU ops (ops/moe.h), random inputs, f32, f16 and
// bf16 (the CPU reference gets exactly the values the device arrays hold):
// - router_cuda vs router_cpu: ids exact, weights within 1e-5. The inputs are drawn so that no
//   two of a row's top-k + 1 logits lie within 1e-3 of each other (rows that do are redrawn):
//   both sides sum the logits in f32 in different orders (about 1e-6 apart here), so a nearer
//   tie could legitimately swap. Odd column counts, x row strides past the row, id and weight
//   strides past top_k (the entries past top_k are checked untouched), 6 to 1,000 experts, the
//   released shape (2,816 columns, 128 experts, top-8).
// - moe_cuda vs moe_cpu: rows 1, 7, 133, 256 and 300; columns, inner and out widths that are and
//   are not multiples of 8 (the tensor-core kernels' vector and element copy paths), padded row
//   strides, 6 experts top-2 and 128 experts top-8, a skewed routing (every token's first slot on
//   one expert: several row tiles for it, none for some others). Tolerance per output element,
//   with B = Σ_j |w_j| Σ_i |down[o, i]| · |h_ji| (h the CPU's f32 GLU row):
//     u·(B + |want|) + 1e-5·(1 + B), u the unit roundoff of the type (f32: 2^-24).
//   The u·B term is the device's rounding of the GLU rows to the activation type (each h_ji
//   moves by at most u·|h_ji|, B bounds what that moves the output), u·|want| the output's
//   rounding, and 1e-5·(1 + B) the f32 sums' different orders and the CPU's fast tanh / exp
//   (both about 1e-7 relative, propagated through the two GEMMs: a tenfold margin).
// - ids outside 0..experts − 1 contribute nothing (what the CPU gives for those slots at weight 0).
// - CUDA graph capture: the router and the experts captured on a stream, instantiated and
//   replayed, give the eager launch's bits; after new inputs are copied into the same buffers, a
//   replay follows them (the routing changes) and again matches the eager launch bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>

#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "half_test_util.h"
#include "ops/activation.h"
#include "ops/moe.h"
#include "ops/ops_cuda.h"

namespace il::test {
namespace {

std::vector<float> random_values(std::size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// A value on a grid of 1/32 within ±7.97: exactly representable in f16 and bf16 (at most 8
// significant bits), so rounding the router's input to either type changes nothing and the tie
// check below sees the values both sides compute with.
float grid_value(std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  return std::clamp(std::round(d(rng) * 32.0f), -255.0f, 255.0f) / 32.0f;
}

// ---------------------------------------------------------------------------------------------
// Router

struct RouterCase {
  std::size_t rows, cols, experts, top_k, x_pad;
  bool scale;
  bool renormalize = true;  // false: DeepSeek-V2's router (the chosen probabilities as they are)
  float routed_scale = 1.0f;
};

std::ostream& operator<<(std::ostream& os, const RouterCase& c) {
  return os << c.rows << " rows, " << c.cols << " cols, " << c.experts << " experts, top-" << c.top_k
            << (c.renormalize ? "" : ", not renormalised") << ", scale " << c.routed_scale;
}

// Whether row x's logits (exact, in double) keep the top_k + 1 largest 1e-3 apart.
bool well_separated(const float* x, const std::vector<float>& w, const RouterCase& c) {
  std::vector<double> l(c.experts);
  for (std::size_t e = 0; e < c.experts; ++e) {
    double dot = 0.0;
    for (std::size_t k = 0; k < c.cols; ++k) dot += static_cast<double>(x[k]) * w[e * c.cols + k];
    l[e] = dot;
  }
  std::sort(l.begin(), l.end(), std::greater<>());
  const std::size_t last = std::min(c.top_k, c.experts - 1);
  for (std::size_t j = 0; j < last; ++j)
    if (l[j] - l[j + 1] < 1e-3) return false;
  return true;
}

class RouterParity : public ::testing::TestWithParam<std::tuple<DType, RouterCase>> {};

TEST_P(RouterParity, MatchesCpu) {
  IL_REQUIRE_GPU();
  const auto [type, c] = GetParam();
  std::mt19937 rng(static_cast<unsigned>(c.rows * 131 + c.cols * 7 + c.experts));
  const std::size_t ldx = c.cols + c.x_pad, ld_ids = c.top_k + 1, ld_w = c.top_k + 3;
  // Logits of about unit scale, as the model's normed router input gives.
  const std::vector<float> w = random_values(c.experts * c.cols, rng, 1.0f / std::sqrt(static_cast<float>(c.cols)));
  std::vector<float> scale(c.experts);
  std::uniform_real_distribution<float> su(0.5f, 1.5f);
  for (float& s : scale) s = su(rng);
  std::vector<float> x(c.rows * ldx, 0.0f);
  std::size_t redrawn = 0;
  for (std::size_t r = 0; r < c.rows; ++r) {
    for (int attempt = 0;; ++attempt) {
      ASSERT_LT(attempt, 1000) << "no well-separated row found";
      for (std::size_t k = 0; k < c.cols; ++k) x[r * ldx + k] = grid_value(rng);
      if (well_separated(x.data() + r * ldx, w, c)) break;
      ++redrawn;
    }
  }
  TypedArray dx(x, type);
  ASSERT_EQ(dx.values(), x) << "the grid values are exact in every type";
  DeviceArray<float> dw(w), dscale(scale);
  DeviceArray<int32_t> dids(std::vector<int32_t>(c.rows * ld_ids, -7));
  DeviceArray<float> dweights(std::vector<float>(c.rows * ld_w, 7.0f));

  ops::RouterArgs a;
  a.x = dx.view(0, ldx);
  a.w = dw.get();
  a.expert_scale = c.scale ? dscale.get() : nullptr;
  a.ids = dids.get();
  a.ld_ids = ld_ids;
  a.weights = dweights.get();
  a.ld_weights = ld_w;
  a.rows = c.rows;
  a.cols = c.cols;
  a.experts = c.experts;
  a.top_k = c.top_k;
  a.renormalize = c.renormalize;
  a.scale = c.routed_scale;
  ops::router_cuda(a, nullptr);
  IL_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<int32_t> got_ids = dids.download();
  const std::vector<float> got_w = dweights.download();

  std::vector<int32_t> want_ids(c.rows * ld_ids, -7);
  std::vector<float> want_w(c.rows * ld_w, 7.0f);
  {
    ops::RouterArgs h = a;
    h.x = ops::f32_view(x.data(), ldx);
    h.w = w.data();
    h.expert_scale = c.scale ? scale.data() : nullptr;
    h.ids = want_ids.data();
    h.weights = want_w.data();
    ThreadPool pool(4);
    ops::router_cpu(h, pool);
  }
  double worst = 0.0;
  for (std::size_t r = 0; r < c.rows; ++r) {
    for (std::size_t j = 0; j < ld_ids; ++j)
      ASSERT_EQ(got_ids[r * ld_ids + j], want_ids[r * ld_ids + j]) << "row " << r << " slot " << j;
    for (std::size_t j = 0; j < ld_w; ++j) {
      const float g = got_w[r * ld_w + j], v = want_w[r * ld_w + j];
      ASSERT_TRUE(std::isfinite(g)) << "row " << r << " slot " << j;
      worst = std::max(worst, std::abs(static_cast<double>(g) - v));
    }
  }
  std::printf("[router %s %zu×%zu, %zu experts top-%zu] weights max-abs %.3g (tolerance 1e-5), %zu rows redrawn\n",
              type_name(type).c_str(), c.rows, c.cols, c.experts, c.top_k, worst, redrawn);
  EXPECT_LE(worst, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Shapes, RouterParity,
                         ::testing::Combine(::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                                            ::testing::Values(RouterCase{1, 37, 6, 2, 0, true},
                                                              RouterCase{7, 64, 6, 2, 3, false},
                                                              RouterCase{4, 20, 4, 4, 0, true},
                                                              RouterCase{133, 100, 128, 8, 5, true},
                                                              RouterCase{133, 2816, 128, 8, 0, true},
                                                              RouterCase{1000, 2816, 128, 8, 0, true},
                                                              RouterCase{9, 1100, 1000, 3, 1, true},
                                                              RouterCase{5, 48, 8, 3, 2, false, false, 2.5f},
                                                              RouterCase{64, 1280, 64, 6, 0, false, false, 1.0f})));

// ---------------------------------------------------------------------------------------------
// Experts

struct MoeCase {
  std::size_t rows, cols, out_cols, inner, experts, top_k, x_pad, out_pad;
  bool skew;
  Activation act;
};

std::ostream& operator<<(std::ostream& os, const MoeCase& c) {
  return os << c.rows << " rows, " << c.cols << " → " << c.inner << " → " << c.out_cols << ", " << c.experts
            << " experts top-" << c.top_k << (c.skew ? ", skewed" : "");
}

// Per token, top_k distinct experts in random order; skewed: slot 0 is expert 2 for every token.
std::vector<int32_t> random_ids(std::size_t rows, std::size_t ld, std::size_t experts, std::size_t top_k, bool skew,
                                std::mt19937& rng) {
  std::vector<int32_t> ids(rows * ld, 0), all(experts);
  for (std::size_t r = 0; r < rows; ++r) {
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    if (skew) std::iter_swap(all.begin(), std::find(all.begin(), all.end(), 2));
    for (std::size_t j = 0; j < top_k; ++j) ids[r * ld + j] = all[j];
  }
  return ids;
}

// The inputs of one MoE case on the host (f32, rounded to the type) and the device.
struct MoeData {
  std::vector<float> x, gate_up, down, weights;
  std::vector<int32_t> ids;
  std::size_t ldx, ld_ids, ld_w, ldo;
};

MoeData make_data(const MoeCase& c, std::mt19937& rng) {
  MoeData d;
  d.ldx = c.cols + c.x_pad;
  d.ld_ids = c.top_k + 2;
  d.ld_w = c.top_k + 1;
  d.ldo = c.out_cols + c.out_pad;
  d.x = random_values(c.rows * d.ldx, rng, 1.0f);
  d.gate_up = random_values(c.experts * 2 * c.inner * c.cols, rng, 1.0f / std::sqrt(static_cast<float>(c.cols)));
  d.down = random_values(c.experts * c.out_cols * c.inner, rng, 1.0f / std::sqrt(static_cast<float>(c.inner)));
  d.ids = random_ids(c.rows, d.ld_ids, c.experts, c.top_k, c.skew, rng);
  d.weights.assign(c.rows * d.ld_w, 0.0f);
  std::uniform_real_distribution<float> wu(0.1f, 1.0f);
  for (float& v : d.weights) v = wu(rng);
  return d;
}

ops::MoeArgs moe_args(const MoeCase& c, const MoeData& d) {
  ops::MoeArgs a;
  a.ld_ids = d.ld_ids;
  a.ld_weights = d.ld_w;
  a.rows = c.rows;
  a.cols = c.cols;
  a.out_cols = c.out_cols;
  a.experts = c.experts;
  a.top_k = c.top_k;
  a.inner = c.inner;
  a.act = c.act;
  return a;
}

// The CPU op on host values (ids with an id outside the experts given weight 0 and id 0).
std::vector<float> cpu_moe(const MoeCase& c, const MoeData& d, const std::vector<float>& x,
                           const std::vector<float>& gate_up, const std::vector<float>& down) {
  std::vector<float> out(c.rows * d.ldo, 7.0f);
  std::vector<int32_t> ids = d.ids;
  std::vector<float> weights = d.weights;
  for (std::size_t r = 0; r < c.rows; ++r)
    for (std::size_t j = 0; j < c.top_k; ++j)
      if (ids[r * d.ld_ids + j] < 0 || ids[r * d.ld_ids + j] >= static_cast<int32_t>(c.experts)) {
        ids[r * d.ld_ids + j] = 0;
        weights[r * d.ld_w + j] = 0.0f;
      }
  ops::MoeArgs a = moe_args(c, d);
  a.x = ops::f32_view(x.data(), d.ldx);
  a.ids = ids.data();
  a.weights = weights.data();
  a.gate_up = ops::f32_view(gate_up.data());
  a.down = ops::f32_view(down.data());
  a.out = ops::f32_view(out.data(), d.ldo);
  ThreadPool pool(8);
  ops::moe_cpu(a, pool);
  return out;
}

// B[r, o] = Σ_j |w_j| Σ_i |down_e[o, i]| · |h_ji|: what rounding every GLU value by a relative
// u moves output (r, o) by at most, divided by u.
std::vector<double> rounding_bound(const MoeCase& c, const MoeData& d, const std::vector<float>& x,
                                   const std::vector<float>& gate_up, const std::vector<float>& down) {
  std::vector<double> bound(c.rows * c.out_cols, 0.0);
  std::vector<double> h(c.inner);
  for (std::size_t r = 0; r < c.rows; ++r)
    for (std::size_t j = 0; j < c.top_k; ++j) {
      const int32_t e = d.ids[r * d.ld_ids + j];
      if (e < 0 || e >= static_cast<int32_t>(c.experts)) continue;
      const float* wgu = gate_up.data() + static_cast<std::size_t>(e) * 2 * c.inner * c.cols;
      for (std::size_t i = 0; i < c.inner; ++i) {
        double g = 0.0, u = 0.0;
        for (std::size_t k = 0; k < c.cols; ++k) {
          g += static_cast<double>(x[r * d.ldx + k]) * wgu[i * c.cols + k];
          u += static_cast<double>(x[r * d.ldx + k]) * wgu[(c.inner + i) * c.cols + k];
        }
        h[i] = std::abs(ops::apply_activation(c.act, static_cast<float>(g)) * u);
      }
      const double w = std::abs(d.weights[r * d.ld_w + j]);
      const float* wd = down.data() + static_cast<std::size_t>(e) * c.out_cols * c.inner;
      for (std::size_t o = 0; o < c.out_cols; ++o) {
        double s = 0.0;
        for (std::size_t i = 0; i < c.inner; ++i) s += std::abs(static_cast<double>(wd[o * c.inner + i])) * h[i];
        bound[r * c.out_cols + o] += w * s;
      }
    }
  return bound;
}

// Checks got against want over the real columns (the tolerance of the file's header) and that
// the padding columns past out_cols still hold the 7.0 they were filled with.
void expect_close(const MoeCase& c, const MoeData& d, DType type, const std::vector<float>& got,
                  const std::vector<float>& want, const std::vector<double>& bound, const char* label) {
  const double u = unit_roundoff(type);
  double worst_ratio = 0.0, worst = 0.0;
  std::size_t bad = 0;
  for (std::size_t r = 0; r < c.rows; ++r) {
    for (std::size_t o = 0; o < d.ldo; ++o) {
      const float g = got[r * d.ldo + o], v = want[r * d.ldo + o];
      if (o >= c.out_cols) {
        if (g != 7.0f && bad++ < 5) ADD_FAILURE() << label << ": padding column " << o << " of row " << r << " written";
        continue;
      }
      const double b = bound[r * c.out_cols + o];
      const double tol = u * (b + std::abs(v)) + 1e-5 * (1.0 + b);
      const double err = std::isfinite(g) ? std::abs(static_cast<double>(g) - v) : INFINITY;
      worst = std::max(worst, err);
      worst_ratio = std::max(worst_ratio, err / tol);
      if (!(err <= tol) && bad++ < 5)
        ADD_FAILURE() << label << ": row " << r << " col " << o << " got " << g << " want " << v << " (tolerance "
                      << tol << ")";
    }
  }
  std::printf("[%s %s] max-abs %.3g, worst error / tolerance %.3g\n", label, type_name(type).c_str(), worst,
              worst_ratio);
  EXPECT_EQ(bad, 0u);
}

class MoeParity : public ::testing::TestWithParam<std::tuple<DType, MoeCase>> {};

TEST_P(MoeParity, MatchesCpu) {
  IL_REQUIRE_GPU();
  const auto [type, c] = GetParam();
  std::mt19937 rng(static_cast<unsigned>(c.rows * 17 + c.cols * 3 + c.experts + c.inner));
  const MoeData d = make_data(c, rng);
  TypedArray x(d.x, type), gate_up(d.gate_up, type), down(d.down, type);
  TypedArray out(std::vector<float>(c.rows * d.ldo, 7.0f), type);
  DeviceArray<int32_t> ids(d.ids);
  DeviceArray<float> weights(d.weights);
  const std::size_t ws_bytes =
      ops::moe_workspace_bytes(c.rows, c.cols, c.out_cols, c.experts, c.top_k, c.inner, dtype_size(type));
  DeviceArray<uint8_t> workspace(std::vector<uint8_t>(ws_bytes, 0xff));  // garbage: nothing may rely on zeros

  ops::MoeArgs a = moe_args(c, d);
  a.x = x.view(0, d.ldx);
  a.ids = ids.get();
  a.weights = weights.get();
  a.gate_up = gate_up.view();
  a.down = down.view();
  a.out = out.view(0, d.ldo);
  a.workspace = workspace.get();
  a.workspace_bytes = ws_bytes;
  ops::moe_cuda(a, nullptr);
  IL_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> got = out.download();

  const std::vector<float> want = cpu_moe(c, d, x.values(), gate_up.values(), down.values());
  const std::vector<double> bound = rounding_bound(c, d, x.values(), gate_up.values(), down.values());
  std::ostringstream label;
  label << "moe " << c;
  expect_close(c, d, type, got, want, bound, label.str().c_str());

  // A second launch over the same workspace gives the same bits (nothing carried over).
  ops::moe_cuda(a, nullptr);
  const std::vector<float> again = out.download();
  EXPECT_EQ(0, std::memcmp(again.data(), got.data(), got.size() * sizeof(float))) << "a second launch differs";
}

constexpr Activation kTanhGelu = Activation::kGeluTanh;

INSTANTIATE_TEST_SUITE_P(
    Shapes, MoeParity,
    ::testing::Combine(::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                       ::testing::Values(MoeCase{1, 37, 37, 24, 6, 2, 0, 0, false, kTanhGelu},
                                         MoeCase{7, 40, 40, 32, 6, 2, 8, 3, false, kTanhGelu},
                                         MoeCase{133, 37, 45, 20, 6, 2, 3, 0, false, Activation::kSilu},
                                         MoeCase{133, 64, 64, 48, 128, 8, 0, 0, false, kTanhGelu},
                                         MoeCase{133, 136, 136, 72, 6, 2, 0, 1, true, kTanhGelu},
                                         MoeCase{256, 200, 200, 70, 16, 4, 0, 0, true, kTanhGelu},
                                         MoeCase{300, 264, 200, 136, 128, 8, 8, 0, false, kTanhGelu})));

// Ids outside the experts (−1 and `experts`) add nothing; the rest as the CPU op.
TEST(MoeInvalidIds, ContributeNothing) {
  IL_REQUIRE_GPU();
  const MoeCase c{7, 40, 40, 32, 6, 2, 0, 0, false, kTanhGelu};
  for (DType type : {DType::kF32, DType::kBF16}) {
    std::mt19937 rng(5);
    MoeData d = make_data(c, rng);
    d.ids[1 * d.ld_ids + 0] = -1;
    d.ids[3 * d.ld_ids + 1] = 6;
    d.ids[4 * d.ld_ids + 0] = -1;
    d.ids[4 * d.ld_ids + 1] = 1000;  // a token with no valid expert: zeros
    TypedArray x(d.x, type), gate_up(d.gate_up, type), down(d.down, type);
    TypedArray out(std::vector<float>(c.rows * d.ldo, 7.0f), type);
    DeviceArray<int32_t> ids(d.ids);
    DeviceArray<float> weights(d.weights);
    const std::size_t ws_bytes =
        ops::moe_workspace_bytes(c.rows, c.cols, c.out_cols, c.experts, c.top_k, c.inner, dtype_size(type));
    DeviceArray<uint8_t> workspace(std::vector<uint8_t>(ws_bytes, 0xff));
    ops::MoeArgs a = moe_args(c, d);
    a.x = x.view(0, d.ldx);
    a.ids = ids.get();
    a.weights = weights.get();
    a.gate_up = gate_up.view();
    a.down = down.view();
    a.out = out.view(0, d.ldo);
    a.workspace = workspace.get();
    a.workspace_bytes = ws_bytes;
    ops::moe_cuda(a, nullptr);
    const std::vector<float> got = out.download();
    const std::vector<float> want = cpu_moe(c, d, x.values(), gate_up.values(), down.values());
    expect_close(c, d, type, got, want, rounding_bound(c, d, x.values(), gate_up.values(), down.values()),
                 "moe with invalid ids");
    for (std::size_t o = 0; o < c.out_cols; ++o) EXPECT_EQ(got[4 * d.ldo + o], 0.0f);
  }
}

// A workspace smaller than moe_workspace_bytes, or none, is an il::Error naming the op.
TEST(MoeChecks, WorkspaceTooSmall) {
  IL_REQUIRE_GPU();
  const MoeCase c{7, 40, 40, 32, 6, 2, 0, 0, false, kTanhGelu};
  std::mt19937 rng(6);
  const MoeData d = make_data(c, rng);
  TypedArray x(d.x, DType::kF32), gate_up(d.gate_up, DType::kF32), down(d.down, DType::kF32);
  TypedArray out(std::vector<float>(c.rows * d.ldo, 7.0f), DType::kF32);
  DeviceArray<int32_t> ids(d.ids);
  DeviceArray<float> weights(d.weights);
  const std::size_t ws_bytes = ops::moe_workspace_bytes(c.rows, c.cols, c.out_cols, c.experts, c.top_k, c.inner, 4);
  DeviceArray<uint8_t> workspace(std::vector<uint8_t>(ws_bytes, 0));
  ops::MoeArgs a = moe_args(c, d);
  a.x = x.view(0, d.ldx);
  a.ids = ids.get();
  a.weights = weights.get();
  a.gate_up = gate_up.view();
  a.down = down.view();
  a.out = out.view(0, d.ldo);
  a.workspace = workspace.get();
  a.workspace_bytes = ws_bytes - 1;
  EXPECT_THROW(ops::moe_cuda(a, nullptr), Error);
  a.workspace = nullptr;
  a.workspace_bytes = ws_bytes;
  EXPECT_THROW(ops::moe_cuda(a, nullptr), Error);
}

// ---------------------------------------------------------------------------------------------
// Graph capture

template <typename T>
std::vector<T> download_on(const DeviceArray<T>& a, std::size_t n) {
  std::vector<T> h(n);
  IL_CUDA_CHECK(cudaDeviceSynchronize());
  IL_CUDA_CHECK(cudaMemcpy(h.data(), a.get(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

TEST(MoeGraph, CapturedRouterAndExpertsReplayTheEagerBits) {
  IL_REQUIRE_GPU();
  const DType type = DType::kBF16;
  const MoeCase c{133, 136, 136, 72, 16, 4, 0, 0, false, kTanhGelu};
  std::mt19937 rng(11);
  MoeData d = make_data(c, rng);
  const std::vector<float> router_w =
      random_values(c.experts * c.cols, rng, 1.0f / std::sqrt(static_cast<float>(c.cols)));
  const std::vector<float> x2 = random_values(c.rows * d.ldx, rng, 1.0f);
  TypedArray x(d.x, type), x_next(x2, type), gate_up(d.gate_up, type), down(d.down, type);
  TypedArray out(std::vector<float>(c.rows * d.ldo, 7.0f), type);
  DeviceArray<float> rw(router_w);
  DeviceArray<int32_t> ids(std::vector<int32_t>(c.rows * d.ld_ids, 0));
  DeviceArray<float> weights(std::vector<float>(c.rows * d.ld_w, 0.0f));
  const std::size_t ws_bytes =
      ops::moe_workspace_bytes(c.rows, c.cols, c.out_cols, c.experts, c.top_k, c.inner, dtype_size(type));
  DeviceArray<uint8_t> workspace(std::vector<uint8_t>(ws_bytes, 0xff));

  ops::RouterArgs ra;
  ra.x = x.view(0, d.ldx);
  ra.w = rw.get();
  ra.ids = ids.get();
  ra.ld_ids = d.ld_ids;
  ra.weights = weights.get();
  ra.ld_weights = d.ld_w;
  ra.rows = c.rows;
  ra.cols = c.cols;
  ra.experts = c.experts;
  ra.top_k = c.top_k;
  ops::MoeArgs a = moe_args(c, d);
  a.x = x.view(0, d.ldx);
  a.ids = ids.get();
  a.weights = weights.get();
  a.gate_up = gate_up.view();
  a.down = down.view();
  a.out = out.view(0, d.ldo);
  a.workspace = workspace.get();
  a.workspace_bytes = ws_bytes;

  cudaStream_t stream;
  IL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::size_t out_bytes = c.rows * d.ldo * dtype_size(type);
  const auto run_eager = [&] {
    ops::router_cuda(ra, stream);
    ops::moe_cuda(a, stream);
    IL_CUDA_CHECK(cudaStreamSynchronize(stream));
  };
  run_eager();
  const std::vector<float> eager1 = out.download();
  const std::vector<int32_t> ids1 = download_on(ids, c.rows * d.ld_ids);

  cudaGraph_t graph;
  IL_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  ops::router_cuda(ra, stream);
  ops::moe_cuda(a, stream);
  IL_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  IL_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));

  // Replay over cleared outputs and ids.
  IL_CUDA_CHECK(cudaMemsetAsync(out.get(), 0, out_bytes, stream));
  IL_CUDA_CHECK(cudaMemsetAsync(ids.get(), 0, c.rows * d.ld_ids * sizeof(int32_t), stream));
  IL_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  IL_CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::vector<float> replay1 = out.download();
  EXPECT_EQ(0, std::memcmp(replay1.data(), eager1.data(), eager1.size() * sizeof(float))) << "first replay";

  // New inputs in the same buffers: the replay follows them.
  IL_CUDA_CHECK(cudaMemcpyAsync(x.get(), x_next.get(), c.rows * d.ldx * dtype_size(type), cudaMemcpyDeviceToDevice,
                                stream));
  run_eager();
  const std::vector<float> eager2 = out.download();
  const std::vector<int32_t> ids2 = download_on(ids, c.rows * d.ld_ids);
  EXPECT_NE(ids1, ids2) << "new inputs should route differently";
  IL_CUDA_CHECK(cudaMemsetAsync(out.get(), 0, out_bytes, stream));
  IL_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  IL_CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::vector<float> replay2 = out.download();
  EXPECT_EQ(0, std::memcmp(replay2.data(), eager2.data(), eager2.size() * sizeof(float))) << "replay on new inputs";
  EXPECT_NE(0, std::memcmp(eager1.data(), eager2.data(), eager1.size() * sizeof(float)));

  // And the eager result is the CPU's (router on the device's ids, experts as the parity test).
  MoeData d2 = d;
  d2.ids = ids2;
  d2.weights = download_on(weights, c.rows * d.ld_w);
  expect_close(c, d2, type, eager2, cpu_moe(c, d2, x_next.values(), gate_up.values(), down.values()),
               rounding_bound(c, d2, x_next.values(), gate_up.values(), down.values()), "moe in a graph");

  IL_CUDA_CHECK(cudaGraphExecDestroy(exec));
  IL_CUDA_CHECK(cudaGraphDestroy(graph));
  IL_CUDA_CHECK(cudaStreamDestroy(stream));
}

// Timing, printed (not a check): the released model's layer shape at 256 tokens (bf16, 128
// experts top-8, 2,816 → 704 → 2,816): every expert receives rows, so the weights are read once.
TEST(MoeTiming, ReleasedShapeAt256Tokens) {
  IL_REQUIRE_GPU();
  const DType type = DType::kBF16;
  const std::size_t rows = 256, cols = 2816, inner = 704, experts = 128, top_k = 8;
  std::mt19937 rng(3);
  TypedArray x(random_values(rows * cols, rng, 1.0f), type);
  // The weights (about 0.76 G values) as bf16 bits from a cheap generator: the timing does not
  // depend on the values, and drawing that many normals would take longer than the test.
  const auto bf16_weights = [](std::size_t n, float scale, uint32_t seed) {
    std::vector<uint16_t> bits(n);
    uint32_t s = seed;
    for (uint16_t& b : bits) {
      s = s * 1664525u + 1013904223u;
      b = f32_to_bf16((static_cast<float>(s >> 20) - 2048.0f) / 2048.0f * scale);
    }
    return bits;
  };
  DeviceArray<uint16_t> gate_up_bits(bf16_weights(experts * 2 * inner * cols, 0.03f, 1));
  DeviceArray<uint16_t> down_bits(bf16_weights(experts * cols * inner, 0.06f, 2));
  const ops::TensorView gate_up{gate_up_bits.get(), type, 0}, down{down_bits.get(), type, 0};
  TypedArray out(std::vector<float>(rows * cols, 0.0f), type);
  DeviceArray<float> rw(random_values(experts * cols, rng, 1.0f / std::sqrt(static_cast<float>(cols))));
  DeviceArray<int32_t> ids(std::vector<int32_t>(rows * top_k, 0));
  DeviceArray<float> weights(std::vector<float>(rows * top_k, 0.0f));
  const std::size_t ws_bytes = ops::moe_workspace_bytes(rows, cols, cols, experts, top_k, inner, 2);
  DeviceArray<uint8_t> workspace(std::vector<uint8_t>(ws_bytes, 0));
  ops::RouterArgs ra;
  ra.x = x.view(0, cols);
  ra.w = rw.get();
  ra.ids = ids.get();
  ra.ld_ids = top_k;
  ra.weights = weights.get();
  ra.ld_weights = top_k;
  ra.rows = rows;
  ra.cols = cols;
  ra.experts = experts;
  ra.top_k = top_k;
  ops::MoeArgs a;
  a.x = x.view(0, cols);
  a.ids = ids.get();
  a.ld_ids = top_k;
  a.weights = weights.get();
  a.ld_weights = top_k;
  a.gate_up = gate_up;
  a.down = down;
  a.out = out.view(0, cols);
  a.rows = rows;
  a.cols = cols;
  a.out_cols = cols;
  a.experts = experts;
  a.top_k = top_k;
  a.inner = inner;
  a.workspace = workspace.get();
  a.workspace_bytes = ws_bytes;
  const double router_ms = median_ms([&] { ops::router_cuda(ra, nullptr); });
  const double moe_ms = median_ms([&] { ops::moe_cuda(a, nullptr); });
  const double weight_gb = static_cast<double>(experts) * 3 * inner * cols * 2 / 1e9;
  std::printf("[moe timing bf16, 256 tokens, 128 experts top-8, 2816/704] router %.3f ms, experts %.3f ms "
              "(%.2f GB of weights: %.0f GB/s)\n",
              router_ms, moe_ms, weight_gb, weight_gb / (moe_ms * 1e-3));
}

}  // namespace
}  // namespace il::test
