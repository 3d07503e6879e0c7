// The attention dispatch (ops/attention_dispatch_cuda.h): which kernel it picks for each kind of
// case, that a launch through it gives the bits of the chosen kernel launched directly (and of
// attention_half_cuda's own automatic choice, which asks the same dispatch), and that a case no
// kernel supports is refused. The kernels' accuracy is held by the parity tests.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "gpu_test_util.h"
#include "half_test_util.h"
#include "ops/attention_dispatch_cuda.h"
#include "ops/attention_half_cuda.h"
#include "../unit/reference.h"

namespace il::test {
namespace {

using ops::AttentionCudaArgs;
using ops::AttentionKernel;
using ops::AttentionQueries;
using ops::MaskMode;

bool same_bytes(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

bool hopper() {
  cudaDeviceProp p{};
  IL_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
  return p.major == 9 && p.minor == 0;
}

struct Case {
  const char* what;
  DType type;
  std::size_t heads, kv_heads, head_dim;
  AttentionQueries queries;
  bool rows_known;
  float scale;
  AttentionKernel want_hopper, want_other;
};

TEST(GpuAttentionDispatch, PicksTheFirstSupportingKernelAndLaunchesItsBits) {
  IL_REQUIRE_GPU();
  const std::vector<int32_t> lengths = {1, 0, 97, 300, 33};
  const auto starts = starts_of(lengths);
  const std::size_t total = static_cast<std::size_t>(starts.back());
  DeviceArray<int32_t> dstarts(starts);
  const bool sm90 = hopper();
  const Case cases[] = {
      {"f32, head_dim 64", DType::kF32, 4, 2, 64, AttentionQueries::kAll, true, 0.125f, AttentionKernel::kFlash,
       AttentionKernel::kFlash},
      {"f16, head_dim 24 (Qwen3 fixture)", DType::kF16, 4, 2, 24, AttentionQueries::kAll, true, 0.2f,
       AttentionKernel::kMmaSync, AttentionKernel::kMmaSync},
      {"bf16, head_dim 128", DType::kBF16, 4, 2, 128, AttentionQueries::kAll, true, 0.09f, AttentionKernel::kMmaSync,
       AttentionKernel::kMmaSync},
      {"f16, head_dim 64, rows known", DType::kF16, 4, 2, 64, AttentionQueries::kAll, true, 0.125f,
       AttentionKernel::kTma, AttentionKernel::kMmaSync},
      {"bf16, head_dim 64, rows unknown", DType::kBF16, 4, 4, 64, AttentionQueries::kAll, false, 0.125f,
       AttentionKernel::kWgmma, AttentionKernel::kMmaSync},
      {"f16, head_dim 160 (past the tensor-core kernels)", DType::kF16, 2, 1, 160, AttentionQueries::kAll, true,
       0.08f, AttentionKernel::kFlash, AttentionKernel::kFlash},
      {"f16, negative scale", DType::kF16, 2, 2, 64, AttentionQueries::kAll, true, -0.125f, AttentionKernel::kFlash,
       AttentionKernel::kFlash},
      {"bf16, first rows", DType::kBF16, 4, 2, 64, AttentionQueries::kFirst, true, 0.125f, AttentionKernel::kFirstRow,
       AttentionKernel::kFirstRow},
      {"f32, last rows", DType::kF32, 4, 2, 24, AttentionQueries::kLast, true, 0.2f, AttentionKernel::kLastRow,
       AttentionKernel::kLastRow},
  };
  uint32_t seed = 3;
  for (const Case& c : cases) {
    const std::size_t qw = c.heads * c.head_dim, kvw = c.kv_heads * c.head_dim, ld = qw + 2 * kvw;
    const std::size_t out_rows = c.queries == AttentionQueries::kAll ? total : lengths.size();
    const auto host = random_vector(total * ld, seed++, 1.5f);
    // Element arrays of the type: f32 as is, halves rounded once.
    const std::size_t es = dtype_size(c.type);
    DeviceArray<uint8_t> in(std::vector<uint8_t>(total * ld * es)), out_a(std::vector<uint8_t>(out_rows * qw * es)),
        out_b(std::vector<uint8_t>(out_rows * qw * es));
    if (c.type == DType::kF32) {
      IL_CUDA_CHECK(cudaMemcpy(in.get(), host.data(), host.size() * 4, cudaMemcpyHostToDevice));
    } else {
      DeviceArray<float> src(host);
      ops::convert_cuda({ops::f32_view(src.get()), {in.get(), c.type, 0}, host.size()}, nullptr);
    }
    AttentionCudaArgs a;
    a.q = in.get();
    a.k = in.get() + qw * es;
    a.v = in.get() + (qw + kvw) * es;
    a.ldq = a.ldk = a.ldv = ld;
    a.out = out_a.get();
    a.ldo = qw;
    a.seq_starts = dstarts.get();
    a.num_seqs = lengths.size();
    a.heads = c.heads;
    a.kv_heads = c.kv_heads;
    a.head_dim = c.head_dim;
    a.scale = c.scale;
    a.mask = MaskMode::kCausal;
    a.type = c.type;
    a.queries = c.queries;
    a.max_seq_len = longest(lengths);
    a.rows = c.rows_known ? total : 0;
    const AttentionKernel want = sm90 ? c.want_hopper : c.want_other;
    const AttentionKernel got = ops::choose_attention_kernel(a);
    EXPECT_EQ(ops::attention_kernel_name(got), std::string(ops::attention_kernel_name(want))) << c.what;
    ops::attention_dispatch_cuda(a, nullptr);
    AttentionCudaArgs b = a;
    b.out = out_b.get();
    ops::attention_launch_cuda(want, b, nullptr);
    EXPECT_TRUE(same_bytes(out_a.download(), out_b.download())) << c.what << ": dispatch and the " << ops::attention_kernel_name(want)
                                                  << " kernel differ";
    if (c.type != DType::kF32 && c.queries == AttentionQueries::kAll && c.head_dim <= 128 && c.scale > 0) {
      DeviceArray<uint8_t> out_c(std::vector<uint8_t>(out_rows * qw * es));
      ops::attention_half_cuda({a.q, a.ldq, a.k, a.ldk, a.v, a.ldv, out_c.get(), a.ldo, a.seq_starts, a.num_seqs,
                                a.heads, a.kv_heads, a.head_dim, a.scale, a.mask, a.window,
                                c.type == DType::kF16 ? ops::HalfType::kF16 : ops::HalfType::kBF16, a.rows},
                               a.max_seq_len, nullptr);
      EXPECT_TRUE(same_bytes(out_a.download(), out_c.download())) << c.what << ": attention_half_cuda chose another kernel";
    }
    std::printf("[attention dispatch] %s: %s\n", c.what, ops::attention_kernel_name(got));
  }
  // No kernel: head_dim past 256, or a GQA that does not divide.
  AttentionCudaArgs bad;
  bad.q = bad.k = bad.v = dstarts.get();
  bad.out = dstarts.get();
  bad.seq_starts = dstarts.get();
  bad.num_seqs = 1;
  bad.heads = bad.kv_heads = 1;
  bad.head_dim = 300;
  bad.ldq = bad.ldk = bad.ldv = bad.ldo = 300;
  bad.max_seq_len = 1;
  EXPECT_THROW(ops::choose_attention_kernel(bad), Error);
  bad.head_dim = 64;
  bad.heads = 3;
  bad.kv_heads = 2;
  EXPECT_THROW(ops::attention_dispatch_cuda(bad, nullptr), Error);
}

}  // namespace
}  // namespace il::test
