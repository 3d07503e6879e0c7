// SigLIP's two new ops on CUDA against the CPU ops, in every element type: the MAP head's
// attention with a learned query (ops/probe_attention.h) over ragged batches (sequences of 1 and
// of many keys, an empty padding sequence, which must give a zero row), odd head counts and
// widths up to kProbeAttentionMaxHeadDim, and strided k / v windows; and the patch embedding's
// row upload (zeros on padding rows) and position add (ops/image_patches.h). f16 / bf16 inputs
// are rounded once and the CPU op gets the same values, so the kernels' own error is measured.
// Tolerances: f32 1e-5 of the output's scale (an online softmax sums in another order and uses
// expf on the device), f16 / bf16 4 unit roundoffs of the type (one rounding on the store plus
// the f32 sums' error, far below a unit roundoff at these lengths).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <random>

#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "half_test_util.h"
#include "ops/image_patches.h"
#include "ops/ops_cuda.h"
#include "ops/probe_attention.h"
#include "../unit/reference.h"

namespace il::test {
namespace {

constexpr float kSentinel = 0.75f;


class ImageOps : public ::testing::TestWithParam<DType> {
 protected:
  DType type() const { return GetParam(); }
  double tol() const { return type() == DType::kF32 ? 1e-5 : 4.0 * unit_roundoff(type()); }
};

TEST_P(ImageOps, ProbeAttentionMatchesCpu) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  uint32_t seed = 220;
  double worst = 0.0;
  struct Shape {
    std::size_t heads, head_dim;
  };
  for (const Shape sh : {Shape{1, 1}, Shape{3, 7}, Shape{4, 8}, Shape{16, 72}, Shape{5, 33}, Shape{2, 256}})
    for (int layout = 0; layout < 2; ++layout) {
      const std::vector<int32_t> lens = {1, 16, 729, 3, 0};  // the last: a padding sequence
      std::vector<int32_t> starts = {0};
      for (int32_t l : lens) starts.push_back(starts.back() + l);
      const std::size_t tokens = static_cast<std::size_t>(starts.back()), w = sh.heads * sh.head_dim;
      // 0: k | v dense side by side; 1: inside a wider buffer at odd columns.
      const std::size_t ld = layout == 1 ? 2 * w + 7 : 2 * w, k_off = layout == 1 ? 3 : 0, v_off = k_off + w;
      const std::size_t ldo = layout == 1 ? w + 5 : w, o_off = layout == 1 ? 1 : 0;
      const TypedArray kv(random_vector(tokens * ld, seed++, 2.0f), type());
      const std::vector<float> q = random_vector(w, seed++, 1.5f);
      const float scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
      std::vector<float> cpu_out(lens.size() * ldo, kSentinel);
      ops::ProbeAttentionArgs a;
      a.q = q.data();
      a.k = ops::f32_view(kv.values().data() + k_off, ld);
      a.v = ops::f32_view(kv.values().data() + v_off, ld);
      a.out = ops::f32_view(cpu_out.data() + o_off, ldo);
      a.seq_starts = starts.data();
      a.num_seqs = lens.size();
      a.heads = sh.heads;
      a.head_dim = sh.head_dim;
      a.scale = scale;
      ops::probe_attention_cpu(a, pool);
      const DeviceArray<float> dq(q);
      const DeviceArray<int32_t> dstarts(starts);
      const TypedArray gout(std::vector<float>(lens.size() * ldo, kSentinel), type());
      ops::ProbeAttentionArgs g = a;
      g.q = dq.get();
      g.k = kv.view(k_off, ld);
      g.v = kv.view(v_off, ld);
      g.out = gout.view(o_off, ldo);
      g.seq_starts = dstarts.get();
      ops::probe_attention_cuda(g, nullptr);
      const std::vector<float> got = gout.download();
      const double err = rel_error(got, cpu_out);
      worst = std::max(worst, err);
      EXPECT_LE(err, tol()) << type_name(type()) << " heads=" << sh.heads << " head_dim=" << sh.head_dim
                            << " layout=" << layout;
      const std::size_t pad = lens.size() - 1;
      for (std::size_t c = 0; c < w; ++c) ASSERT_EQ(got[pad * ldo + o_off + c], 0.0f) << "padding sequence";
    }
  std::printf("[probe_attention] %s: worst error %.3g (tolerance %.3g)\n", type_name(type()).c_str(), worst, tol());
}

TEST_P(ImageOps, PatchRowsAndPositionsMatchCpu) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  for (std::size_t cols : {1, 3, 192, 589}) {
    const std::size_t real = 37, launched = 48, ld = cols + 3;
    const std::vector<float> rows = random_vector(real * cols, 31 + static_cast<uint32_t>(cols), 2.0f);
    // The CPU reference in the type's values: rows rounded once as the kernel stores them.
    const TypedArray rounded(rows, type());
    std::vector<float> want(launched * ld, kSentinel);
    ops::patch_rows_cpu({rounded.values().data(), real, launched, cols, ops::f32_view(want.data(), ld)});
    const DeviceArray<float> drows(rows);
    const TypedArray gout(std::vector<float>(launched * ld, kSentinel), type());
    ops::patch_rows_cuda({drows.get(), real, launched, cols, gout.view(0, ld)}, nullptr);
    const std::vector<float> got = gout.download();
    EXPECT_EQ(rel_error(got, want), 0.0) << "patch rows, cols=" << cols;

    const std::size_t table_rows = 29;
    const TypedArray table(random_vector(table_rows * cols, 7 + static_cast<uint32_t>(cols), 1.0f), type());
    std::vector<int32_t> pos(launched);
    for (std::size_t r = 0; r < launched; ++r) pos[r] = static_cast<int32_t>((r * 7) % table_rows);
    std::vector<float> cpu = got;  // add onto what the upload left, in f32
    ops::add_position_cpu({pos.data(), launched, cols, ops::f32_view(table.values().data()), ops::f32_view(cpu.data(), ld)},
                          pool);
    const DeviceArray<int32_t> dpos(pos);
    ops::add_position_cuda({dpos.get(), launched, cols, table.view(), gout.view(0, ld)}, nullptr);
    const std::vector<float> after = gout.download();
    // One rounding of the sum on the store (none in f32).
    EXPECT_LE(rel_error(after, cpu), type() == DType::kF32 ? 0.0 : 2.0 * unit_roundoff(type())) << "cols=" << cols;
  }
}

// Patch rows cut from uint8 images through a byte value table (compact ImageInputs): the same
// table entries as the CPU op, bit for bit in f32 and rounded once to f16 / bf16 (the CPU rows
// rounded by the same conversion); padding rows zero, with the real row count given on the
// host or read on the device (as a replayed graph does). Odd patch sizes and channel counts,
// images of several grid cells, a last partial launch.
TEST_P(ImageOps, PatchBytesMatchCpu) {
  IL_REQUIRE_GPU();
  ThreadPool pool(0);
  struct Shape {
    std::size_t channels, patch, rows, cols, images;
  };
  uint32_t seed = 2200;
  for (const Shape sh : {Shape{3, 16, 224, 224, 2}, Shape{3, 5, 15, 35, 3}, Shape{1, 3, 9, 6, 4},
                         Shape{4, 7, 14, 21, 2}, Shape{3, 14, 28, 14, 1}}) {
    const std::size_t cols = sh.channels * sh.patch * sh.patch, ld = cols + 5;
    const std::size_t n = (sh.rows / sh.patch) * (sh.cols / sh.patch), real = sh.images * n, launched = real + 9;
    std::vector<std::uint8_t> bytes(sh.images * sh.rows * sh.cols * sh.channels);
    std::mt19937 rng(seed++);
    for (std::uint8_t& b : bytes) b = static_cast<std::uint8_t>(rng() & 0xff);
    const std::vector<float> table = random_vector(sh.channels * 256, seed++, 3.0f);
    std::vector<float> want(launched * ld, kSentinel);
    ops::PatchBytesArgs a;
    a.bytes = bytes.data();
    a.byte_values = table.data();
    a.channels = sh.channels;
    a.patch = sh.patch;
    a.image_rows = sh.rows;
    a.image_cols = sh.cols;
    a.num_rows = real;
    a.launched_rows = launched;
    a.out = ops::f32_view(want.data(), ld);
    ops::patch_bytes_cpu(a, pool);
    const std::vector<float> rounded = TypedArray(want, type()).values();  // the stores' one rounding
    const DeviceArray<std::uint8_t> dbytes(bytes);
    const DeviceArray<float> dtable(table);
    const DeviceArray<int32_t> dreal(std::vector<int32_t>{static_cast<int32_t>(real)});
    for (int on_device = 0; on_device < 2; ++on_device) {
      const TypedArray gout(std::vector<float>(launched * ld, kSentinel), type());
      ops::PatchBytesArgs g = a;
      g.bytes = dbytes.get();
      g.byte_values = dtable.get();
      g.out = gout.view(0, ld);
      if (on_device) {
        g.num_rows = launched;  // ignored: the device count wins
        g.device_num_rows = dreal.get();
      }
      ops::patch_bytes_cuda(g, nullptr);
      const std::vector<float> got = gout.download();
      ASSERT_EQ(got.size(), rounded.size());
      std::size_t mismatches = 0;
      for (std::size_t i = 0; i < got.size(); ++i)
        if (std::memcmp(&got[i], &rounded[i], sizeof(float)) != 0) ++mismatches;
      EXPECT_EQ(mismatches, 0u) << type_name(type()) << " channels=" << sh.channels << " patch=" << sh.patch << " "
                                << sh.rows << "x" << sh.cols << " on_device=" << on_device;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, ImageOps, ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return type_name(info.param); });

}  // namespace
}  // namespace il::test
