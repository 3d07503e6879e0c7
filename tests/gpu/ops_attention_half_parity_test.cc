// Tensor-core f16 / bf16 attention against the CPU op: the inputs are rounded to the element type
// once, the CPU reference runs in f32 on exactly those rounded values, and the kernel's output
// (rounded to the element type) is compared relative to the output's scale, as the f32 parity
// test does. Ragged batches mixing lengths 1 … 1000 (and empty sequences), every head-dim
// instantiation (32, 64, 96, 128) plus padded odd sizes, all masks, GQA, the fast (aligned fused
// QKV) and the general load path, a CUDA-graph capture, and 8192-token sequences.
//
// Tolerances. With u the unit roundoff of the element type (f16: 2⁻¹¹, bf16: 2⁻⁸), the kernel
// differs from the f32 reference on the same rounded inputs by (1) rounding the output, ≤ u·|out|
// ≤ u·scale; (2) rounding the probabilities P to the element type for the P·V product; the
// normalisation sums those same rounded values, so the output stays a convex combination of the
// v_j whose weights are off by at most about 2u relative: ≤ 2u·max|v| (max|v| can exceed the
// output's scale by a little when short sequences set the scale); (3) f32 rounding in the two
// products, the exponentials and the online softmax, ~1e-6 here. So the error is ≤ about 3u·scale
// in the worst case; the tests allow 4u: f16 2e-3 (4·2⁻¹¹ = 1.95e-3), bf16 1.6e-2 (4·2⁻⁸ = 1.56e-2).
// Each case prints its measured error so the margin is visible in the log.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <tuple>

#include "core/dtype.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "ops/attention.h"
#include "ops/attention_half_cuda.h"
#include "ops/attention_wgmma_cuda.h"
#include "ops/ops_cuda.h"
#include "../unit/reference.h"

namespace il::test {
namespace {

using ops::HalfType;
using ops::MaskMode;

constexpr float kSentinel = -0.75f;  // exact in f16 and bf16; must survive outside the out window

double tolerance(HalfType t) { return t == HalfType::kF16 ? 2e-3 : 1.6e-2; }
const char* type_name(HalfType t) { return t == HalfType::kF16 ? "f16" : "bf16"; }

// f32 → f16 bits, round to nearest even, for the finite values the tests use (|x| < 65504).
uint16_t to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x < 0x38800000u) {  // below 2⁻¹⁴: a subnormal (or zero), whose unit is 2⁻²⁴
    const float mag = std::fabs(f) * 16777216.0f;  // exact: a power-of-two scaling
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(mag)));
  }
  x += 0xfffu + ((x >> 13) & 1u);  // round the 13 dropped bits to nearest even (may carry into exp)
  return static_cast<uint16_t>(sign | ((x - 0x38000000u) >> 13));  // rebias 127 → 15
}

uint16_t to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

uint16_t encode(HalfType t, float f) { return t == HalfType::kF16 ? to_f16(f) : to_bf16(f); }
float decode(HalfType t, uint16_t h) { return t == HalfType::kF16 ? f16_to_f32(h) : bf16_to_f32(h); }

std::vector<uint16_t> encode_all(HalfType t, const std::vector<float>& v) {
  std::vector<uint16_t> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) r[i] = encode(t, v[i]);
  return r;
}
std::vector<float> decode_all(HalfType t, const std::vector<uint16_t>& v) {
  std::vector<float> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) r[i] = decode(t, v[i]);
  return r;
}

TEST(HalfConversion, TestEncodersRoundToNearestEven) {
  // The encoders feed every comparison below, so they are checked against exact values: no GPU.
  EXPECT_EQ(to_f16(1.0f), 0x3c00);
  EXPECT_EQ(to_f16(-2.0f), 0xc000);
  EXPECT_EQ(to_f16(1.0f + 1.0f / 2048), 0x3c00);  // halfway → even
  EXPECT_EQ(to_f16(1.0f + 3.0f / 2048), 0x3c02);  // halfway → even (up)
  EXPECT_EQ(to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(to_f16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(to_f16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 units → even
  EXPECT_EQ(to_f16(std::ldexp(1023.5f, -24)), 0x0400);  // rounds up into the smallest normal
  EXPECT_EQ(to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(to_bf16(1.0f + 1.0f / 256), 0x3f80);  // halfway → even
  EXPECT_EQ(to_bf16(1.0f + 3.0f / 256), 0x3f82);
  for (float f : {0.1f, -3.7f, 1e-3f, 123.456f, 6e-6f})
    for (HalfType t : {HalfType::kF16, HalfType::kBF16}) {
      const float r = decode(t, encode(t, f));
      EXPECT_LE(std::fabs(r - f), std::fabs(f) * (t == HalfType::kF16 ? 1.0 / 2048 : 1.0 / 256) + 6e-8) << f;
    }
}

struct HalfCase {
  std::vector<int32_t> lengths;
  std::size_t heads, kv_heads, head_dim;
  MaskMode mask;
  std::size_t window;
  bool odd_layout = false;  // odd row stride and column-1 windows: the general (unaligned) load path
  bool sharp = false;       // scale 1 instead of 1/√d: near one-hot softmax rows
};

std::string describe(const HalfCase& c, HalfType t) {
  std::ostringstream os;
  os << type_name(t) << ", " << c.lengths.size() << " seqs (longest " << longest(c.lengths) << "), heads " << c.heads
     << "/" << c.kv_heads << ", head_dim " << c.head_dim << (c.mask == MaskMode::kCausal ? ", causal" : ", bidirectional")
     << ", window " << c.window << (c.odd_layout ? ", odd layout" : "") << (c.sharp ? ", sharp" : "");
  return os.str();
}

struct Buffers {
  std::vector<float> packed_rounded;  // the inputs as the kernel sees them, in f32
  std::size_t ld, qoff, koff, voff, ldo, ooff, total;
};

// q, k, v packed like the fused QKV projection (q | k | v per row); the output is a window of a
// wider buffer. Aligned layout: every row start of every head 16-byte aligned when head_dim is a
// multiple of 8 (the fast path). Odd layout: stride and windows shifted by one element.
Buffers make_inputs(const HalfCase& c, HalfType t, uint32_t seed) {
  Buffers b;
  b.total = static_cast<std::size_t>(starts_of(c.lengths).back());
  const std::size_t qw = c.heads * c.head_dim, kvw = c.kv_heads * c.head_dim;
  const std::size_t shift = c.odd_layout ? 1 : 0;
  b.qoff = shift;
  b.koff = shift + qw;
  b.voff = shift + qw + kvw;
  b.ld = qw + 2 * kvw + shift;
  b.ooff = c.odd_layout ? 1 : 8;
  b.ldo = qw + (c.odd_layout ? 3 : 16);
  b.packed_rounded = decode_all(t, encode_all(t, random_vector(b.total * b.ld, seed, 1.5f)));
  return b;
}

// Max error relative to the output's scale of the half kernel against attention_cpu; the whole
// output buffer is compared, so a write outside the window shows as an error too.
// nan_rows: that many rows of NaN follow the batch in the q / k / v buffer (and a.rows covers
// them), as stale scratch rows may; no NaN may reach the output.
double half_attention_error(const HalfCase& c, HalfType t, uint32_t seed, bool via_graph = false,
                            const ops::HalfAttentionTuning* tuning = nullptr, std::size_t nan_rows = 0) {
  const auto starts = starts_of(c.lengths);
  const Buffers b = make_inputs(c, t, seed);
  const float scale = c.sharp ? 1.0f : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const float* hp = b.packed_rounded.data();
  std::vector<float> out_cpu(b.total * b.ldo, kSentinel);
  ThreadPool pool(0);
  ops::attention_cpu({hp + b.qoff, b.ld, hp + b.koff, b.ld, hp + b.voff, b.ld, out_cpu.data() + b.ooff, b.ldo,
                      starts.data(), c.lengths.size(), c.heads, c.kv_heads, c.head_dim, scale, c.mask, c.window},
                     pool);

  std::vector<uint16_t> packed = encode_all(t, b.packed_rounded);
  packed.resize((b.total + nan_rows) * b.ld, t == HalfType::kF16 ? uint16_t{0x7e00} : uint16_t{0x7fc0});
  DeviceArray<uint16_t> dp(packed);
  DeviceArray<uint16_t> dout(std::vector<uint16_t>(b.total * b.ldo, encode(t, kSentinel)));
  DeviceArray<int32_t> dstarts(starts);
  ops::HalfAttentionArgs a;
  a.q = dp.get() + b.qoff;
  a.ldq = b.ld;
  a.k = dp.get() + b.koff;
  a.ldk = b.ld;
  a.v = dp.get() + b.voff;
  a.ldv = b.ld;
  a.out = dout.get() + b.ooff;
  a.ldo = b.ldo;
  a.seq_starts = dstarts.get();
  a.num_seqs = c.lengths.size();
  a.heads = c.heads;
  a.kv_heads = c.kv_heads;
  a.head_dim = c.head_dim;
  a.scale = scale;
  a.mask = c.mask;
  a.window = c.window;
  a.type = t;
  a.rows = b.total + nan_rows;
  if (!via_graph) {
    if (!tuning) ops::attention_half_cuda(a, longest(c.lengths), nullptr);
    else ops::attention_half_cuda_tuned(a, longest(c.lengths), nullptr, *tuning);
  } else {
    // Capturable: no allocation, no synchronisation inside (a capture would fail on either).
    cudaStream_t stream;
    IL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    IL_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    ops::attention_half_cuda(a, longest(c.lengths), stream);
    IL_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    IL_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    IL_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    IL_CUDA_CHECK(cudaGraphLaunch(exec, stream));  // a replay recomputes the same result
    IL_CUDA_CHECK(cudaStreamSynchronize(stream));
    IL_CUDA_CHECK(cudaGraphExecDestroy(exec));
    IL_CUDA_CHECK(cudaGraphDestroy(graph));
    IL_CUDA_CHECK(cudaStreamDestroy(stream));
  }
  return rel_error(decode_all(t, dout.download()), out_cpu);
}

class GpuHalfAttention : public ::testing::TestWithParam<std::tuple<HalfCase, HalfType>> {};

TEST_P(GpuHalfAttention, MatchesCpuOnRoundedInputs) {
  IL_REQUIRE_GPU();
  const auto& [c, t] = GetParam();
  const double err = half_attention_error(c, t, 42);
  std::printf("[half attention] %s: max error %.3g (tolerance %.3g)\n", describe(c, t).c_str(), err, tolerance(t));
  EXPECT_LE(err, tolerance(t)) << describe(c, t);
}

const std::vector<int32_t> kMixed = {1, 7, 1000, 0, 33, 2, 257, 97, 64, 65, 31, 500};

const std::vector<HalfCase> kCases = {
    {{1}, 1, 1, 32, MaskMode::kBidirectional, 0},
    {{7}, 2, 2, 8, MaskMode::kBidirectional, 0},  // head_dim 8 in the 32 instantiation
    {kMixed, 4, 4, 32, MaskMode::kBidirectional, 0},
    {kMixed, 12, 12, 64, MaskMode::kBidirectional, 0},
    {kMixed, 4, 2, 64, MaskMode::kCausal, 0},
    {kMixed, 6, 1, 80, MaskMode::kBidirectional, 128},  // 80 padded to 96, GQA 6:1
    {kMixed, 4, 4, 96, MaskMode::kCausal, 0},
    {kMixed, 3, 3, 96, MaskMode::kBidirectional, 0, false, true},
    {kMixed, 2, 2, 128, MaskMode::kCausal, 0},
    {kMixed, 4, 2, 128, MaskMode::kBidirectional, 16},
    {kMixed, 2, 1, 128, MaskMode::kBidirectional, 0, false, true},
    {kMixed, 4, 2, 64, MaskMode::kCausal, 100, true},  // general load path, aligned head_dim
    {{97, 1, 33}, 4, 2, 16, MaskMode::kCausal, 0},
    {{1, 2, 3, 5, 8, 13, 21, 34, 55}, 6, 3, 7, MaskMode::kCausal, 5},  // odd head_dim: general path
    {{300, 41}, 3, 3, 48, MaskMode::kCausal, 63},
    {{129, 0, 64, 63, 65, 1000}, 2, 2, 72, MaskMode::kBidirectional, 0, true},
    {{200, 1}, 1, 1, 1, MaskMode::kBidirectional, 0},
    {{333}, 2, 2, 120, MaskMode::kCausal, 31},
    // Head dim 64, aligned: the Hopper kernel's cases on an sm_90 device (windows, causal
    // windows, GQA, near one-hot rows).
    {kMixed, 4, 4, 64, MaskMode::kBidirectional, 100},
    {kMixed, 6, 2, 64, MaskMode::kCausal, 65},
    {{129, 3, 700, 128, 1}, 2, 2, 64, MaskMode::kBidirectional, 0, false, true},
    // Qwen3's layouts, causal with GQA 2:1: head_dim 24 (the fixture; padded to 32) and 128.
    {kMixed, 4, 2, 24, MaskMode::kCausal, 0},
    {{1, 0, 40, 1500}, 16, 8, 128, MaskMode::kCausal, 0},
    // ModernBERT's sliding layers: bidirectional windows of ±64 at head_dim 64 (ModernBERT-base,
    // the Hopper kernels' shape) and ±8 at head_dim 16 (the fixtures).
    {{1, 0, 40, 129, 1500}, 12, 12, 64, MaskMode::kBidirectional, 128},
    {{64, 17, 9, 8, 1}, 4, 4, 16, MaskMode::kBidirectional, 16},
};

INSTANTIATE_TEST_SUITE_P(Ragged, GpuHalfAttention,
                         ::testing::Combine(::testing::ValuesIn(kCases),
                                            ::testing::Values(HalfType::kF16, HalfType::kBF16)));

// The tunings the timing test compares: the default, then each forced choice.
struct NamedTuning {
  const char* name;
  ops::HalfAttentionTuning tuning;
};
const std::vector<NamedTuning> kTunings = {
    {"m1 s2", {1, 2, false, false}},   {"m1 s4", {1, 4, false, false}}, {"m2 s2", {2, 2, false, false}},
    {"m2 s4", {2, 4, false, false}},   {"m2 s4 pair-exp", {2, 4, true, false}},
    {"seq-major grid", {0, 0, false, true}},
    {"mma.sync", {0, 0, false, false, ops::HalfAttentionKernel::kMmaSync}},
};

TEST(GpuHalfAttentionTuned, EveryTuningMatchesCpu) {
  IL_REQUIRE_GPU();
  // The default takes one tuning per head dim; the others stay reachable for benchmarks, so they
  // are held to the same tolerance.
  const std::vector<HalfCase> cases = {{kMixed, 4, 2, 64, MaskMode::kCausal, 0},
                                       {kMixed, 4, 4, 32, MaskMode::kBidirectional, 40},
                                       {{129, 3, 700}, 2, 2, 64, MaskMode::kBidirectional, 0, false, true},
                                       {{300, 1, 77}, 4, 1, 128, MaskMode::kCausal, 0}};
  for (const NamedTuning& nt : kTunings)
    for (const HalfCase& c : cases)
      for (HalfType t : {HalfType::kF16, HalfType::kBF16}) {
        const double err = half_attention_error(c, t, 9, false, &nt.tuning);
        std::printf("[half attention] tuning %s, %s: max error %.3g\n", nt.name, describe(c, t).c_str(), err);
        EXPECT_LE(err, tolerance(t)) << "tuning " << nt.name << ", " << describe(c, t);
      }
}

TEST(GpuHalfAttentionGraph, CapturedLaunchMatchesCpu) {
  IL_REQUIRE_GPU();
  for (HalfType t : {HalfType::kF16, HalfType::kBF16}) {
    const HalfCase c{kMixed, 4, 2, 64, MaskMode::kBidirectional, 0};
    const double err = half_attention_error(c, t, 7, true);
    std::printf("[half attention] graph replay, %s: max error %.3g\n", describe(c, t).c_str(), err);
    EXPECT_LE(err, tolerance(t)) << describe(c, t);
  }
}

TEST(GpuHalfAttentionArgs, RejectsHeadDimAbove128NonDividingGqaAndNonPositiveScale) {
  // Argument checks run on the host before any launch: no GPU needed.
  ops::HalfAttentionArgs a;
  int32_t dummy = 0;  // never dereferenced: the checks throw first
  a.q = a.k = a.v = a.out = &dummy;
  a.seq_starts = &dummy;
  a.num_seqs = 1;
  a.heads = a.kv_heads = 1;
  a.head_dim = 129;
  a.ldq = a.ldk = a.ldv = a.ldo = 129;
  EXPECT_FALSE(ops::attention_half_supported(129));
  EXPECT_TRUE(ops::attention_half_supported(128));
  EXPECT_THROW(ops::attention_half_cuda(a, 1, nullptr), Error);
  a.head_dim = 64;
  a.heads = 3;
  a.kv_heads = 2;
  a.ldq = a.ldk = a.ldv = a.ldo = 192;
  EXPECT_THROW(ops::attention_half_cuda(a, 1, nullptr), Error);
  a.kv_heads = 3;
  a.scale = 0.0f;  // the kernel takes the row max on raw scores: the scale must keep their order
  EXPECT_THROW(ops::attention_half_cuda(a, 1, nullptr), Error);
}

TEST(GpuHalfAttentionLong, Sequence8192MatchesCpuWithoutDeviceAllocation) {
  IL_REQUIRE_GPU();
  // An n × n score buffer would be 128 MiB per head in f16; the kernel allocates nothing. A first
  // small launch loads the module so that lazy loading is not counted.
  const std::size_t total = 8192, heads = 2, hd = 64, width = heads * hd, ld = 3 * width;
  for (HalfType t : {HalfType::kF16, HalfType::kBF16}) {
    const std::vector<int32_t> starts = {0, static_cast<int32_t>(total)};
    const auto packed = decode_all(t, encode_all(t, random_vector(total * ld, 11, 1.0f)));
    DeviceArray<uint16_t> dp(encode_all(t, packed)), dout(std::vector<uint16_t>(total * width, 0));
    DeviceArray<int32_t> dstarts(starts);
    ops::HalfAttentionArgs a;
    a.q = dp.get();
    a.k = dp.get() + width;
    a.v = dp.get() + 2 * width;
    a.ldq = a.ldk = a.ldv = ld;
    a.out = dout.get();
    a.ldo = width;
    a.rows = total;
    a.seq_starts = dstarts.get();
    a.num_seqs = 1;
    a.heads = a.kv_heads = heads;
    a.head_dim = hd;
    a.scale = 0.125f;
    a.type = t;
    ops::attention_half_cuda(a, 1, nullptr);  // warm-up: a grid for 1 row computes one block of rows
    IL_CUDA_CHECK(cudaDeviceSynchronize());
    std::size_t free_before = 0, free_after = 0, total_mem = 0;
    IL_CUDA_CHECK(cudaMemGetInfo(&free_before, &total_mem));
    ops::attention_half_cuda(a, total, nullptr);
    IL_CUDA_CHECK(cudaDeviceSynchronize());
    IL_CUDA_CHECK(cudaMemGetInfo(&free_after, &total_mem));
    const double grown_mib = (static_cast<double>(free_before) - static_cast<double>(free_after)) / (1 << 20);
    EXPECT_LE(grown_mib, 16.0) << "attention took device memory during the launch";
    std::vector<float> out_cpu(total * width);
    ThreadPool pool(0);
    ops::attention_cpu({packed.data(), ld, packed.data() + width, ld, packed.data() + 2 * width, ld, out_cpu.data(),
                        width, starts.data(), 1, heads, heads, hd, 0.125f, MaskMode::kBidirectional, 0},
                       pool);
    const double err = rel_error(decode_all(t, dout.download()), out_cpu);
    std::printf("[half attention] 8192 bidirectional, %s: max error %.3g\n", type_name(t), err);
    EXPECT_LE(err, tolerance(t)) << type_name(t);
  }
}

TEST(GpuHalfAttentionLong, CausalGqaAndWindowed8192MatchCpu) {
  IL_REQUIRE_GPU();
  for (HalfType t : {HalfType::kF16, HalfType::kBF16}) {
    const HalfCase causal{{8192}, 4, 2, 128, MaskMode::kCausal, 0};
    const HalfCase windowed{{8192, 5}, 2, 2, 64, MaskMode::kBidirectional, 256};
    for (const HalfCase& c : {causal, windowed}) {
      const double err = half_attention_error(c, t, 13);
      std::printf("[half attention] %s: max error %.3g\n", describe(c, t).c_str(), err);
      EXPECT_LE(err, tolerance(t)) << describe(c, t);
    }
  }
}

// Arguments the Hopper kernels take on an sm_90 device (aligned head-dim-64 rows, a known row
// count): whether they apply says whether the device is one.
ops::HalfAttentionArgs hopper_probe() {
  ops::HalfAttentionArgs probe;
  probe.q = probe.k = probe.v = probe.out = reinterpret_cast<void*>(std::uintptr_t{256});
  probe.ldq = probe.ldk = probe.ldv = probe.ldo = 64;
  probe.heads = probe.kv_heads = 1;
  probe.head_dim = 64;
  probe.rows = 1;
  return probe;
}

TEST(GpuHalfAttentionWgmma, HopperKernelMatchesCpuAndTheMmaSyncKernel) {
  IL_REQUIRE_GPU();
  if (!ops::attention_wgmma_applies(hopper_probe())) GTEST_SKIP() << "the wgmma attention kernel needs an sm_90 device";
  // Every mask, GQA, lengths around the 64-key tiles and 128-row blocks, near one-hot rows.
  const std::vector<HalfCase> cases = {
      {kMixed, 12, 12, 64, MaskMode::kBidirectional, 0},
      {kMixed, 4, 2, 64, MaskMode::kCausal, 0},
      {kMixed, 4, 1, 64, MaskMode::kBidirectional, 7},
      {kMixed, 2, 2, 64, MaskMode::kCausal, 200},
      {{64, 65, 127, 128, 129, 191, 192, 193, 1}, 3, 3, 64, MaskMode::kBidirectional, 0},
      {{2048, 5}, 2, 1, 64, MaskMode::kCausal, 0, false, true},
  };
  const ops::HalfAttentionTuning wgmma{0, 0, false, false, ops::HalfAttentionKernel::kWgmma};
  const ops::HalfAttentionTuning tma{0, 0, false, false, ops::HalfAttentionKernel::kTma};
  const ops::HalfAttentionTuning mma_sync{0, 0, false, false, ops::HalfAttentionKernel::kMmaSync};
  for (const HalfCase& c : cases)
    for (HalfType t : {HalfType::kF16, HalfType::kBF16}) {
      const double err = half_attention_error(c, t, 5, false, &wgmma);
      const double err_tma = half_attention_error(c, t, 5, false, &tma);
      const double ref = half_attention_error(c, t, 5, false, &mma_sync);
      std::printf("[half attention] wgmma %s: max error %.3g, TMA-fed %.3g (mma.sync kernel %.3g, tolerance %.3g)\n",
                  describe(c, t).c_str(), err, err_tma, ref, tolerance(t));
      EXPECT_LE(err, tolerance(t)) << describe(c, t);
      EXPECT_LE(err_tma, tolerance(t)) << "TMA-fed kernel, " << describe(c, t);
    }
}

TEST(GpuHalfAttentionWgmma, TmaKernelKeepsNanRowsAfterTheBatchOut) {
  IL_REQUIRE_GPU();
  if (!ops::attention_tma_applies(hopper_probe())) GTEST_SKIP() << "the TMA-fed attention kernel needs an sm_90 device";
  // The last sequence's last key tile reaches into the NaN rows (TMA reads whole boxes); its
  // V rows there must be zeroed before P·V, and its scores masked. A tile past the whole buffer
  // arrives as zeros from the unit itself.
  const ops::HalfAttentionTuning tma{0, 0, false, false, ops::HalfAttentionKernel::kTma};
  const std::vector<HalfCase> cases = {
      {{100, 37, 200}, 4, 4, 64, MaskMode::kBidirectional, 0},
      {{1, 129}, 2, 1, 64, MaskMode::kCausal, 0},
      {{300}, 2, 2, 64, MaskMode::kBidirectional, 90},
  };
  for (const HalfCase& c : cases)
    for (HalfType t : {HalfType::kF16, HalfType::kBF16})
      for (std::size_t nan_rows : {std::size_t{5}, std::size_t{200}}) {
        const double err = half_attention_error(c, t, 3, false, &tma, nan_rows);
        std::printf("[half attention] TMA-fed, %zu NaN rows after the batch, %s: max error %.3g\n", nan_rows,
                    describe(c, t).c_str(), err);
        EXPECT_LE(err, tolerance(t)) << nan_rows << " NaN rows, " << describe(c, t);  // NaN fails too
      }
}

// Timing, not a check: run with --gtest_also_run_disabled_tests. Median of CUDA-event timings of
// 20 launches after warm-up, for the half kernel (both types) and the f32 kernel on the same shape.
struct TimedShape {
  const char* name;
  std::size_t seqs, len, heads, kv_heads, head_dim;
  MaskMode mask;
};

TEST(GpuHalfAttentionTiming, DISABLED_PrintTimings) {
  IL_REQUIRE_GPU();
  const TimedShape shapes[] = {
      {"bge-base 128x256", 128, 256, 12, 12, 64, MaskMode::kBidirectional},
      {"minilm 128x256", 128, 256, 12, 12, 32, MaskMode::kBidirectional},
      {"xlmr-large 128x256", 128, 256, 16, 16, 64, MaskMode::kBidirectional},
      {"bge-base 32x128", 32, 128, 12, 12, 64, MaskMode::kBidirectional},
      {"d96 64x512", 64, 512, 12, 12, 96, MaskMode::kBidirectional},
      {"qwen3 causal 32x1024 gqa", 32, 1024, 16, 8, 128, MaskMode::kCausal},
      {"d128 2x8192", 2, 8192, 16, 16, 128, MaskMode::kBidirectional},
  };
  for (const TimedShape& s : shapes) {
    const std::size_t total = s.seqs * s.len, qw = s.heads * s.head_dim, kvw = s.kv_heads * s.head_dim;
    const std::size_t ld = qw + 2 * kvw;
    std::vector<int32_t> starts(s.seqs + 1);
    for (std::size_t i = 0; i <= s.seqs; ++i) starts[i] = static_cast<int32_t>(i * s.len);
    DeviceArray<int32_t> dstarts(starts);
    // Matrix-product flops: 2·len²·d for Q·Kᵀ and as much for P·V, per sequence and head; a causal
    // mask does about half of that work.
    double flops = 4.0 * static_cast<double>(s.seqs) * s.len * s.len * s.head_dim * s.heads;
    if (s.mask == MaskMode::kCausal) flops /= 2;
    // Values in [−1, 1) from a cheap hash: a normal generator would take seconds at these sizes.
    std::vector<float> packed(total * ld);
    for (std::size_t i = 0; i < packed.size(); ++i)
      packed[i] = static_cast<float>((i * 2654435761u) % 2048u) / 1024.0f - 1.0f;
    for (HalfType t : {HalfType::kF16, HalfType::kBF16}) {
      DeviceArray<uint16_t> dp(encode_all(t, packed)), dout(std::vector<uint16_t>(total * qw, 0));
      ops::HalfAttentionArgs a;
      a.q = dp.get();
      a.k = dp.get() + qw;
      a.v = dp.get() + qw + kvw;
      a.ldq = a.ldk = a.ldv = ld;
      a.out = dout.get();
      a.ldo = qw;
      a.rows = total;
      a.seq_starts = dstarts.get();
      a.num_seqs = s.seqs;
      a.heads = s.heads;
      a.kv_heads = s.kv_heads;
      a.head_dim = s.head_dim;
      a.scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
      a.mask = s.mask;
      a.type = t;
      const double ms = median_ms([&] { ops::attention_half_cuda(a, s.len, nullptr); });
      std::printf("[half attention timing] %-26s %-4s %8.4f ms  %7.1f TFLOP/s\n", s.name, type_name(t), ms,
                  flops / (ms * 1e-3) / 1e12);
      if (t == HalfType::kF16)
        for (const NamedTuning& nt : kTunings) {
          // Past head dim 64 only the grid order applies (and mma.sync is the default there).
          if (s.head_dim > 64 && !nt.tuning.seq_major_grid) continue;
          const double mt = median_ms([&] { ops::attention_half_cuda_tuned(a, s.len, nullptr, nt.tuning); });
          std::printf("[half attention timing] %-26s f16 %-15s %8.4f ms  %7.1f TFLOP/s\n", s.name, nt.name, mt,
                      flops / (mt * 1e-3) / 1e12);
        }
      // The two Hopper kernels by name, where they apply.
      const NamedTuning hopper[] = {{"wgmma", {0, 0, false, false, ops::HalfAttentionKernel::kWgmma}},
                                    {"wgmma tma", {0, 0, false, false, ops::HalfAttentionKernel::kTma}}};
      for (const NamedTuning& nt : hopper) {
        if (!ops::attention_tma_applies(a)) break;
        const double mt = median_ms([&] { ops::attention_half_cuda_tuned(a, s.len, nullptr, nt.tuning); });
        std::printf("[half attention timing] %-26s %-4s %-15s %8.4f ms  %7.1f TFLOP/s\n", s.name, type_name(t),
                    nt.name, mt, flops / (mt * 1e-3) / 1e12);
      }
    }
    DeviceArray<float> dp32(packed), dout32(std::vector<float>(total * qw, 0.0f));
    const ops::AttentionCudaArgs a32 =
        attention_args(ops::f32_view(dp32.get(), ld), ops::f32_view(dp32.get() + qw, ld),
                       ops::f32_view(dp32.get() + qw + kvw, ld), ops::f32_view(dout32.get(), qw), dstarts.get(), s.seqs,
                       s.heads, s.kv_heads, s.head_dim, 1.0f / std::sqrt(static_cast<float>(s.head_dim)), s.mask, 0,
                       s.len);
    const double ms32 = median_ms([&] { ops::attention_cuda(a32, nullptr); });
    std::printf("[half attention timing] %-26s f32  %8.4f ms  %7.1f TFLOP/s\n", s.name, ms32,
                flops / (ms32 * 1e-3) / 1e12);
  }
}

}  // namespace
}  // namespace il::test
