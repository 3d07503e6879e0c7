// Timing, not a check (run with --gtest_also_run_disabled_tests): how long bge-base's f16
// forward at 128 × 256 tokens takes when only some of its parts run, under sustained load.
//
// At that size the H200 runs at its 700 W power cap, its clock falls until the power fits, and
// the time of a forward follows its energy (docs/perf-history.md, eighth session). This test builds
// the forward up part by part from the same kernels the engine launches — cuBLASLt's tuned GEMMs,
// then attention, the erf-GELU, the layer norms — and times each stage after two seconds of
// back-to-back forwards, so every figure is taken at the cap. The first stage (the GEMMs and
// nothing else) is the floor that no choice of element-wise kernels can go under while the GEMMs
// stay cuBLASLt's. Then each part alone, a forward's worth of its calls.
//
// Read the increments with care: a part also changes the values the GEMMs after it multiply,
// and the GEMMs' power follows their operands' bits (attention's outputs, averages of many
// rows, are cheap to multiply), so an increment is not the part's own cost; the parts-alone
// lines are. Energy comes from the driver's counter over at least a second of timed runs.
//
// The shapes are those of the engine's CLS-pooled program (`encode_first`): eleven full layers,
// then a last layer whose projections and attention take the full K / V but only each
// sequence's first row onwards. Operands come from a full-mantissa hash (the multipliers'
// toggling sets their power), one weight set shared by all layers (the weights are 14 MB a
// layer; the activations, 50–200 MB a buffer, dominate the traffic either way).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "backends/cuda/energy_meter.h"
#include "gpu_test_util.h"
#include "ops/attention_half_cuda.h"
#include "ops/gemm_cuda.h"
#include "ops/ops_cuda.h"

namespace il::test {
namespace {

constexpr std::size_t kSeqs = 128, kLen = 256, kTokens = kSeqs * kLen;
constexpr std::size_t kHidden = 768, kHeads = 12, kHeadDim = 64, kFf = 3072, kLayers = 12;

// Values from a full-mantissa hash: uniform in [−scale, scale), or normal with standard
// deviation `scale` around `mean` (Box–Muller on two hashes).
template <typename T>
std::unique_ptr<DeviceArray<T>> hashed_device(std::size_t count, float mean, float scale, bool normal, uint64_t seed,
                                              DType t) {
  const auto hash01 = [](uint64_t i) {
    uint64_t z = i * 0xBF58476D1CE4E5B9ull;
    z ^= z >> 31;
    z *= 0x94D049BB133111EBull;
    z ^= z >> 29;
    return (static_cast<double>(z >> 11) + 0.5) / 9007199254740992.0;  // (0, 1)
  };
  std::vector<float> v(count);
  for (std::size_t i = 0; i < count; ++i) {
    const uint64_t base = 2 * (i + seed * 0x9E3779B97F4A7C15ull);
    const double u = hash01(base);
    const double r = normal ? std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * hash01(base + 1))
                            : 2.0 * u - 1.0;
    v[i] = mean + scale * static_cast<float>(r);
  }
  if constexpr (std::is_same_v<T, float>) {
    return std::make_unique<DeviceArray<float>>(v);
  } else {
    DeviceArray<float> f(v);
    auto h = std::make_unique<DeviceArray<T>>(std::vector<T>(count, 0));
    ops::convert_cuda({ops::f32_view(f.get()), {h->get(), t, 0}, count}, nullptr);
    IL_CUDA_CHECK(cudaDeviceSynchronize());
    return h;
  }
}

// The operands' statistics. The power of the tensor cores follows how many bits toggle, so the
// same shapes cost different energy on different values (docs/perf-history.md, tenth session).
struct DataSet {
  const char* name;
  bool normal;
  float input, weight, down_weight, bias, ln_w_mean, ln_w, ln_b;
};
constexpr DataSet kDataSets[] = {
    // bench's random model (models/weight_source.cc: every tensor N(0, 0.02), norm weights
    // 1 + N(0, 0.02)) and unit-variance hidden states, as its layer norms produce.
    {"bench model (N(0, 0.02) weights)", true, 1.0f, 0.02f, 0.02f, 0.02f, 1.0f, 0.02f, 0.02f},
    // Uniform values, weights scaled so that products stay of unit order, small norm weights.
    {"uniform (weights ±0.06)", false, 1.0f, 0.06f, 0.03f, 0.1f, 0.0f, 0.2f, 0.1f},
};

enum Stage { kGemms, kPlusAttention, kPlusGelu, kPlusLayerNorm, kStages };
constexpr const char* kStageNames[] = {"GEMMs only (cuBLASLt, tuned)", "+ attention", "+ erf-GELU",
                                       "+ layer norms = the trunk"};

TEST(ForwardFloorTiming, DISABLED_BgeBase128x256F16) {
  IL_REQUIRE_GPU();
  const DType t = DType::kF16;
  cuda::EnergyMeter meter(0);
  cudaEvent_t e0, e1;
  IL_CUDA_CHECK(cudaEventCreate(&e0));
  IL_CUDA_CHECK(cudaEventCreate(&e1));
  struct Measured {
    double ms;                     // a launch
    std::optional<double> joules;  // a launch
  };
  // Two seconds of back-to-back launches, to reach the cap and a steady clock, then at least
  // `runs` launches, and at least a second of them, timed together.
  const auto sustained = [&](const auto& launch, int runs) {
    const auto start = std::chrono::steady_clock::now();
    int warm = 0;
    while (std::chrono::steady_clock::now() - start < std::chrono::seconds(2)) {
      for (int i = 0; i < 10; ++i) launch();
      IL_CUDA_CHECK(cudaDeviceSynchronize());
      warm += 10;
    }
    runs = std::max(runs, warm / 2);
    const std::optional<double> j0 = meter.joules();
    IL_CUDA_CHECK(cudaEventRecord(e0, nullptr));
    for (int i = 0; i < runs; ++i) launch();
    IL_CUDA_CHECK(cudaEventRecord(e1, nullptr));
    IL_CUDA_CHECK(cudaEventSynchronize(e1));
    const std::optional<double> j1 = meter.joules();
    float ms = 0.0f;
    IL_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    Measured m{static_cast<double>(ms) / runs, std::nullopt};
    if (j0 && j1) m.joules = (*j1 - *j0) / runs;
    return m;
  };
  const auto print = [&](const std::string& what, const Measured& m, double flops) {
    std::printf("[forward floor] %-78s %7.3f ms", what.c_str(), m.ms);
    if (flops > 0) std::printf("  %4.0f TFLOP/s", flops / m.ms / 1e9);
    if (m.joules) {
      std::printf("  %4.0f W  %5.2f J\n", *m.joules / (m.ms * 1e-3), *m.joules);
    } else {
      std::printf("  (energy: %s)\n", meter.unavailable_reason().c_str());
    }
  };
  ops::CublasLtGemm gemm;
  for (const DataSet& d : kDataSets) {
    // Activations.
    auto h = hashed_device<uint16_t>(kTokens * kHidden, 0.0f, d.input, d.normal, 1, t);
    auto qkv = hashed_device<uint16_t>(kTokens * 3 * kHidden, 0.0f, d.input, d.normal, 2, t);
    auto ctx = hashed_device<uint16_t>(kTokens * kHidden, 0.0f, d.input, d.normal, 3, t);
    auto ao = hashed_device<uint16_t>(kTokens * kHidden, 0.0f, d.input, d.normal, 4, t);
    auto h1 = hashed_device<uint16_t>(kTokens * kHidden, 0.0f, d.input, d.normal, 5, t);
    auto up = hashed_device<uint16_t>(kTokens * kFf, 0.0f, d.input, d.normal, 6, t);
    auto dn = hashed_device<uint16_t>(kTokens * kHidden, 0.0f, d.input, d.normal, 7, t);
    // Weights, biases, norms.
    auto w_qkv = hashed_device<uint16_t>(3 * kHidden * kHidden, 0.0f, d.weight, d.normal, 10, t);
    auto w_o = hashed_device<uint16_t>(kHidden * kHidden, 0.0f, d.weight, d.normal, 11, t);
    auto w_up = hashed_device<uint16_t>(kFf * kHidden, 0.0f, d.weight, d.normal, 12, t);
    auto w_dn = hashed_device<uint16_t>(kHidden * kFf, 0.0f, d.down_weight, d.normal, 13, t);
    auto b_qkv = hashed_device<uint16_t>(3 * kHidden, 0.0f, d.bias, d.normal, 20, t);
    auto b_o = hashed_device<uint16_t>(kHidden, 0.0f, d.bias, d.normal, 21, t);
    auto b_up = hashed_device<uint16_t>(kFf, 0.0f, d.bias, d.normal, 22, t);
    auto b_dn = hashed_device<uint16_t>(kHidden, 0.0f, d.bias, d.normal, 23, t);
    auto ln_w = hashed_device<float>(kHidden, d.ln_w_mean, d.ln_w, d.normal, 30, t);
    auto ln_b = hashed_device<float>(kHidden, 0.0f, d.ln_b, d.normal, 31, t);
    std::vector<int32_t> starts(kSeqs + 1);
    for (std::size_t i = 0; i <= kSeqs; ++i) starts[i] = static_cast<int32_t>(i * kLen);
    DeviceArray<int32_t> seq_starts(starts);

    const auto linear = [&](const DeviceArray<uint16_t>& x, std::size_t m, const DeviceArray<uint16_t>& w,
                            const DeviceArray<uint16_t>& b, std::size_t n, std::size_t k, DeviceArray<uint16_t>& y,
                            Activation act) {
      gemm.run({{x.get(), t, k}, {w.get(), t, k}, {b.get(), t, 0}, {y.get(), t, n}, m, n, k, act}, nullptr);
    };
    const auto layer_norm = [&](const DeviceArray<uint16_t>& x, const DeviceArray<uint16_t>& residual,
                                DeviceArray<uint16_t>& out, std::size_t rows) {
      ops::LayerNormArgs a;
      a.x = {x.get(), t, kHidden};
      a.residual = {residual.get(), t, kHidden};
      a.w = ln_w->get();
      a.b = ln_b->get();
      a.out = {out.get(), t, kHidden};
      a.rows = rows;
      a.cols = kHidden;
      ops::layernorm_cuda(a, nullptr);
    };
    ops::HalfAttentionArgs attn;
    attn.q = qkv->get();
    attn.k = qkv->get() + kHidden;
    attn.v = qkv->get() + 2 * kHidden;
    attn.ldq = attn.ldk = attn.ldv = 3 * kHidden;
    attn.out = ctx->get();
    attn.ldo = kHidden;
    attn.rows = kTokens;
    attn.seq_starts = seq_starts.get();
    attn.num_seqs = kSeqs;
    attn.heads = attn.kv_heads = kHeads;
    attn.head_dim = kHeadDim;
    attn.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
    attn.type = ops::HalfType::kF16;
    const ops::AttentionCudaArgs first =
        attention_args({attn.q, t, attn.ldq}, {attn.k, t, attn.ldk}, {attn.v, t, attn.ldv}, {ctx->get(), t, kHidden},
                       seq_starts.get(), kSeqs, kHeads, kHeads, kHeadDim, attn.scale, ops::MaskMode::kBidirectional, 0,
                       kLen, ops::AttentionQueries::kFirst);

    const auto forward = [&](Stage stage) {
      for (std::size_t l = 0; l < kLayers; ++l) {
        // The last layer runs its projections on one row per sequence (the rows are gathered in
        // the engine; which rows does not matter for the timing).
        const std::size_t rows = l + 1 < kLayers ? kTokens : kSeqs;
        linear(*h, kTokens, *w_qkv, *b_qkv, 3 * kHidden, kHidden, *qkv, Activation::kNone);
        if (stage >= kPlusAttention) {
          if (rows == kTokens) {
            ops::attention_half_cuda(attn, kLen, nullptr);
          } else {
            ops::attention_first_cuda(first, nullptr);
          }
        }
        linear(*ctx, rows, *w_o, *b_o, kHidden, kHidden, *ao, Activation::kNone);
        if (stage >= kPlusLayerNorm) layer_norm(*ao, *h, *h1, rows);
        linear(*h1, rows, *w_up, *b_up, kFf, kHidden, *up, stage >= kPlusGelu ? Activation::kGeluErf : Activation::kNone);
        linear(*up, rows, *w_dn, *b_dn, kHidden, kFf, *dn, Activation::kNone);
        if (stage >= kPlusLayerNorm) layer_norm(*dn, *h1, *h, rows);
      }
    };

    for (int s = 0; s < kStages; ++s) {
      const Stage stage = static_cast<Stage>(s);
      forward(stage);  // tunes cuBLASLt's shapes
      print(std::string("bge-base f16 128x256, ") + d.name + ": " + kStageNames[s],
            sustained([&] { forward(stage); }, 100), 0.0);
    }
    // Parts alone, a forward's worth of calls each, on the values the whole trunk left in the
    // buffers (the increments above also carry how the parts change the GEMMs' operands).
    const std::string part = std::string("bge-base f16 128x256, ") + d.name + ": alone, ";
    print(part + "attention (11 layers + first rows)", sustained([&] {
            for (std::size_t l = 0; l + 1 < kLayers; ++l) ops::attention_half_cuda(attn, kLen, nullptr);
            ops::attention_first_cuda(first, nullptr);
          }, 100), 0.0);
    print(part + "layer norms (22 + 2 on first rows)", sustained([&] {
            for (std::size_t l = 0; l < kLayers; ++l) {
              const std::size_t rows = l + 1 < kLayers ? kTokens : kSeqs;
              layer_norm(*ao, *h, *h1, rows);
              layer_norm(*dn, *h1, *h, rows);
            }
          }, 100), 0.0);
    const auto up_projections = [&](Activation act) {
      return sustained([&] {
        for (std::size_t l = 0; l + 1 < kLayers; ++l) linear(*h1, kTokens, *w_up, *b_up, kFf, kHidden, *up, act);
      }, 100);
    };
    print(part + "up-projections (11)", up_projections(Activation::kNone), 0.0);
    print(part + "up-projections + erf-GELU pass (11)", up_projections(Activation::kGeluErf), 0.0);
  }

  // The ceiling the goal is stated against: one large f16 product (8192³), timed in a
  // short burst from idle (as ../shared/GPU.md's 790 TFLOP/s was) and at the cap.
  {
    constexpr std::size_t n = 8192;
    auto a = hashed_device<uint16_t>(n * n, 0.0f, 1.0f, true, 40, t);
    auto w = hashed_device<uint16_t>(n * n, 0.0f, 0.02f, true, 41, t);
    DeviceArray<uint16_t> y(std::vector<uint16_t>(n * n, 0));
    const auto product = [&] {
      gemm.run({{a->get(), t, n}, {w->get(), t, n}, {}, {y.get(), t, n}, n, n, n, Activation::kNone}, nullptr);
    };
    product();  // tunes
    IL_CUDA_CHECK(cudaDeviceSynchronize());
    std::this_thread::sleep_for(std::chrono::seconds(2));  // let the clock recover
    const double flops = 2.0 * n * n * n;
    const double burst = median_ms(product);
    std::printf("[forward floor] f16 product 8192^3, short burst from idle (median of 20): %.3f ms  %.0f TFLOP/s\n",
                burst, flops / burst / 1e9);
    print("f16 product 8192^3, sustained", sustained(product, 100), flops);
  }
  IL_CUDA_CHECK(cudaEventDestroy(e0));
  IL_CUDA_CHECK(cudaEventDestroy(e1));
}

}  // namespace
}  // namespace il::test
