// The CUDA executor's DiffusionGemma steps against the CPU executor on one hand-built plan:
// - a tied table used three ways: embedding rows (scaled), the LM head (GemmStep, [out, in]) and
//   the self-conditioning product (GemmStep::transpose_w, [in, out]) over a persistent buffer the
//   caller fills with Executor::write before each run;
// - the LM head's logits through SoftcapStep (into f32 rows) and SoftmaxStep;
// - a KV cache at head_dim 512 (GQA 2/1), written by a prefill batch, then read by a canvas
//   batch through a windowed CachedAttentionStep whose anchors travel with the batch
//   (Batch::window_anchors; the prefill gives none: a causal window).
// The canvas runs three times with new persistent contents each time, under
// IL_CUDA_GRAPHS=always: eager, captured, replayed; each matches the CPU executor given the same
// writes. Tolerances: f32 1e-5 of each output's scale (the GEMM and attention sum in other
// orders); bf16 8 u of the scale for the outputs computed straight from rounded inputs (a value
// passes through at most four bf16 roundings — weight, input row, intermediate row, output — each
// at most u of the scale); the softcap and softmax of bf16 logits amplify the logits' rounding
// and are compared in f32 only.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include "backends/cpu/cpu_executor.h"
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"
#include "gpu_test_util.h"
#include "half_test_util.h"
#include "plan/plan.h"
#include "../unit/reference.h"

namespace il::test {
namespace {

constexpr std::size_t kVocab = 40, kHidden = 32, kPersistentRows = 6, kHeadDim = 512, kCacheRows = 64;
constexpr std::size_t kPage = 4, kWindow = 5;

struct DgPlan {
  plan::Plan plan;
  plan::View logits, capped, probs_tok, probs, mixed, attn, processed;
};

DgPlan make_dg_plan() {
  DgPlan p;
  plan::Plan& plan = p.plan;
  const plan::WeightId table = plan.add_weight("table", {kVocab, kHidden}, random_vector(kVocab * kHidden, 71, 0.5f));
  // q (2 heads), k, v (1 KV head) of 512 values side by side: one embedding row per token.
  const plan::WeightId qkv_table =
      plan.add_weight("qkv_table", {kVocab, 4 * kHeadDim}, random_vector(kVocab * 4 * kHeadDim, 72, 0.2f));
  const plan::BufferId emb = plan.add_buffer("emb", plan::Rows::kTokens, kHidden);
  p.logits = plan.whole(plan.add_buffer("logits", plan::Rows::kTokens, kVocab));
  p.capped = plan.whole(plan.add_buffer("capped", plan::Rows::kTokens, kVocab, plan::Elem::kF32));
  p.probs_tok = plan.whole(plan.add_buffer("probs_tok", plan::Rows::kTokens, kVocab));
  p.probs = plan.whole(plan.add_persistent_buffer("probs", kPersistentRows, kVocab));
  p.mixed = plan.whole(plan.add_persistent_buffer("mixed", kPersistentRows, kHidden));
  const plan::BufferId qkv = plan.add_buffer("qkv", plan::Rows::kTokens, 4 * kHeadDim);
  const plan::View k_cache = plan.whole(plan.add_persistent_buffer("k_cache", kCacheRows, kHeadDim));
  const plan::View v_cache = plan.whole(plan.add_persistent_buffer("v_cache", kCacheRows, kHeadDim));
  p.attn = plan.whole(plan.add_buffer("attn", plan::Rows::kTokens, 2 * kHeadDim));
  p.processed = plan.whole(plan.add_persistent_buffer("processed", 16, kVocab, plan::Elem::kF32));

  plan::EmbedStep e;
  e.word = table;
  e.out = plan.whole(emb);
  e.scale = 2.5f;
  plan.add_step("dg", "embed", e);
  plan::GemmStep head;
  head.x = plan.whole(emb);
  head.w = table;
  head.y = p.logits;
  plan.add_step("dg", "lm_head", head);
  plan::SoftcapStep cap;
  cap.x = p.logits;
  cap.cap = 3.0f;
  cap.out = p.capped;
  plan.add_step("dg", "softcap", cap);
  plan::SoftmaxStep soft;
  soft.x = p.capped;
  soft.out = p.probs_tok;
  plan.add_step("dg", "softmax", soft);
  plan::GemmStep self_cond;
  self_cond.x = p.probs;
  self_cond.w = table;
  self_cond.transpose_w = true;
  self_cond.y = p.mixed;
  plan.add_step("dg", "self_conditioning", self_cond);
  plan::EmbedStep eq;
  eq.word = qkv_table;
  eq.out = plan.whole(qkv);
  plan.add_step("dg", "qkv", eq);
  plan::KvWriteStep kw;
  kw.k = plan.slice(qkv, 2 * kHeadDim, kHeadDim);
  kw.v = plan.slice(qkv, 3 * kHeadDim, kHeadDim);
  kw.k_cache = k_cache;
  kw.v_cache = v_cache;
  plan.add_step("dg", "kv_write", kw);
  plan::CachedAttentionStep ca;
  ca.q = plan.slice(qkv, 0, 2 * kHeadDim);
  ca.k_cache = k_cache;
  ca.v_cache = v_cache;
  ca.heads = 2;
  ca.kv_heads = 1;
  ca.head_dim = kHeadDim;
  ca.scale = 1.0f;
  ca.window = kWindow;
  ca.out = p.attn;
  plan.add_step("dg", "attention", ca);
  return p;
}

// Sequence 0 holds pages {6, 0, 4, 2, 8} (20 entries), sequence 1 pages {1, 7} (8 entries).
// Prefill: 12 and 3 tokens at entries 0.., causal (cache length i + 1, no anchors). Canvas: 8 and
// 5 tokens at entries 12.. and 3.., each reading its whole cache and canvas (lengths 20 and 8),
// anchored at its canvas's first entry.
plan::Batch dg_batch(bool canvas) {
  const std::vector<std::vector<int32_t>> pages = {{6, 0, 4, 2, 8}, {1, 7}};
  const std::vector<int32_t> first = canvas ? std::vector<int32_t>{12, 3} : std::vector<int32_t>{0, 0};
  const std::vector<int32_t> count = canvas ? std::vector<int32_t>{8, 5} : std::vector<int32_t>{12, 3};
  plan::Batch b;
  b.seq_starts = {0};
  b.kv_page_starts = {0};
  b.kv_page_size = kPage;
  for (std::size_t s = 0; s < 2; ++s) {
    for (int32_t i = 0; i < count[s]; ++i) {
      const int32_t entry = first[s] + i;
      b.tokens.push_back((entry * 7 + static_cast<int32_t>(s) * 3 + 1) % static_cast<int32_t>(kVocab));
      b.cache_rows.push_back(pages[s][static_cast<std::size_t>(entry) / kPage] * static_cast<int32_t>(kPage) +
                             entry % static_cast<int32_t>(kPage));
      b.cache_lengths.push_back(canvas ? first[s] + count[s] : entry + 1);
      if (canvas) b.window_anchors.push_back(first[s]);
    }
    b.seq_starts.push_back(b.seq_starts.back() + count[s]);
    for (int32_t pg : pages[s]) b.kv_pages.push_back(pg);
    b.kv_page_starts.push_back(static_cast<int32_t>(b.kv_pages.size()));
  }
  return b;
}

std::vector<float> read_view(plan::Executor& exec, const plan::View& v, std::size_t rows) {
  std::vector<float> out(rows * v.cols);
  exec.read(v, out.data());
  return out;
}

TEST(GpuDiffusionGemmaExecutor, TransposedGemmWriteSoftmaxAndWindowedCanvasMatchCpu) {
  IL_REQUIRE_GPU();
  for (const char* dtype : {"f32", "bf16"}) {
    const bool f32 = std::string(dtype) == "f32";
    const double tol = f32 ? 1e-5 : 8.0 * unit_roundoff(DType::kBF16);
    DgPlan gp = make_dg_plan(), cp = make_dg_plan();
    std::unique_ptr<plan::Executor> gpu;
    {
      const ScopedEnv graphs("IL_CUDA_GRAPHS", "always");
      gpu = cuda::make_executor(gp.plan, 64, 0, dtype);
    }
    cpu::CpuExecutor cpu(cp.plan, 64, 2);
    for (int round = 0; round < 4; ++round) {
      const bool canvas = round > 0;
      const plan::Batch batch = dg_batch(canvas);
      // New self-conditioning rows every round: distributions, one of them all zeros (a canvas
      // without self-conditioning).
      std::vector<float> probs(kPersistentRows * kVocab, 0.0f);
      const auto raw = random_vector(kPersistentRows * kVocab, 80 + static_cast<uint32_t>(round), 1.0f);
      for (std::size_t r = 0; r + 1 < kPersistentRows; ++r) {
        double sum = 0;
        for (std::size_t j = 0; j < kVocab; ++j) sum += std::exp(raw[r * kVocab + j]);
        for (std::size_t j = 0; j < kVocab; ++j)
          probs[r * kVocab + j] = static_cast<float>(std::exp(raw[r * kVocab + j]) / sum);
      }
      for (plan::Executor* exec : {gpu.get(), static_cast<plan::Executor*>(&cpu)}) {
        exec->write(exec == gpu.get() ? gp.probs : cp.probs, probs.data(), kPersistentRows);
        exec->set_batch(batch);
        exec->run("dg");
      }
      const std::size_t t = batch.num_tokens();
      struct Out {
        const char* name;
        plan::View g, c;
        std::size_t rows;
        bool half_too;
      };
      for (const Out& o : {Out{"logits", gp.logits, cp.logits, t, true}, Out{"capped", gp.capped, cp.capped, t, false},
                           Out{"probs_tok", gp.probs_tok, cp.probs_tok, t, false},
                           Out{"mixed", gp.mixed, cp.mixed, kPersistentRows, true},
                           Out{"attn", gp.attn, cp.attn, t, true}}) {
        if (!f32 && !o.half_too) continue;
        const double err = rel_error(read_view(*gpu, o.g, o.rows), read_view(cpu, o.c, o.rows));
        EXPECT_LE(err, tol) << dtype << " round " << round << ": " << o.name;
        std::printf("[dg executor %s round %d] %s: error %.3g (tolerance %.3g)\n", dtype, round, o.name, err, tol);
      }
      // The written rows read back as written (bf16: rounded once).
      const auto back = read_view(*gpu, gp.probs, kPersistentRows);
      for (std::size_t i = 0; i < back.size(); ++i)
        ASSERT_EQ(back[i], f32 ? probs[i] : bf16_to_f32(f32_to_bf16(probs[i]))) << dtype << " written value " << i;
    }
    EXPECT_GT(gpu->captured_graphs(), 0u) << dtype << ": the canvas shape must have been captured and replayed";
  }
}

// The sampler's rows where the logits are (Executor::sample_rows) and the self-conditioning row
// moves (fill_rows, copy_rows), against the CPU executor, after the canvas batch's run: draws and
// argmax exact, entropies and the processed rows to the logits' error; the moved rows exact.
TEST(GpuDiffusionGemmaExecutor, SampleRowsFillAndCopyMatchCpu) {
  IL_REQUIRE_GPU();
  DgPlan gp = make_dg_plan(), cp = make_dg_plan();
  std::unique_ptr<plan::Executor> gpu = cuda::make_executor(gp.plan, 64, 0, "f32");
  cpu::CpuExecutor cpu(cp.plan, 64, 2);
  const plan::Batch batch = dg_batch(true);
  const std::size_t t = batch.num_tokens();
  std::vector<float> temps(t);
  std::vector<double> u(t);
  for (std::size_t i = 0; i < t; ++i) {
    temps[i] = 0.3f + 0.1f * static_cast<float>(i);
    u[i] = std::fmod(0.137 * static_cast<double>(i + 1), 1.0);
  }
  std::vector<ops::RowDraw> got(t), want(t);
  std::vector<float> probs(kPersistentRows * kVocab, 0.0f);
  for (plan::Executor* exec : {gpu.get(), static_cast<plan::Executor*>(&cpu)}) {
    const DgPlan& p = exec == gpu.get() ? gp : cp;
    exec->write(p.probs, probs.data(), kPersistentRows);
    exec->fill_rows(p.processed, 0, 16, 7.0f);
    exec->set_batch(batch);
    exec->run("dg");
    exec->sample_rows(p.capped, p.processed, temps, u, exec == gpu.get() ? got.data() : want.data());
  }
  for (std::size_t i = 0; i < t; ++i) {
    EXPECT_EQ(got[i].argmax, want[i].argmax) << "row " << i;
    EXPECT_EQ(got[i].sample, want[i].sample) << "row " << i;
    EXPECT_NEAR(got[i].entropy, want[i].entropy, 1e-4) << "row " << i;
  }
  EXPECT_LE(rel_error(read_view(*gpu, gp.processed, 16), read_view(cpu, cp.processed, 16)), 1e-5);
  const std::vector<float> before = read_view(*gpu, gp.processed, 16);
  for (plan::Executor* exec : {gpu.get(), static_cast<plan::Executor*>(&cpu)}) {
    const DgPlan& p = exec == gpu.get() ? gp : cp;
    exec->copy_rows(p.processed, 2, 13, 3);
    exec->fill_rows(p.processed, 4, 2, -INFINITY);
    exec->copy_rows(p.processed, 0, 0, 2);  // onto itself: nothing
  }
  // Rows 13..15 are rows 2..4 as they were, rows 4 and 5 −inf, the others untouched; the CPU
  // executor did the same.
  const std::vector<float> g = read_view(*gpu, gp.processed, 16), c = read_view(cpu, cp.processed, 16);
  for (std::size_t r = 0; r < 16; ++r)
    for (std::size_t j = 0; j < kVocab; ++j) {
      const float want = r >= 13 ? before[(r - 11) * kVocab + j] : r == 4 || r == 5 ? -INFINITY : before[r * kVocab + j];
      ASSERT_EQ(g[r * kVocab + j], want) << r << ", " << j;
      ASSERT_EQ(std::isinf(c[r * kVocab + j]), std::isinf(want)) << r << ", " << j;
    }
  // Refused: overlapping ranges, rows past the buffer, a token-row buffer, an activation buffer.
  EXPECT_THROW(gpu->copy_rows(gp.processed, 0, 1, 2), Error);
  EXPECT_THROW(gpu->fill_rows(gp.processed, 15, 2, 0.0f), Error);
  EXPECT_THROW(gpu->fill_rows(gp.capped, 0, 1, 0.0f), Error);
  EXPECT_THROW(gpu->fill_rows(gp.probs, 0, 1, 0.0f), Error);
  EXPECT_THROW(gpu->sample_rows(gp.capped, gp.processed, {1.0f}, {0.5}, got.data()), Error);
}

TEST(GpuDiffusionGemmaExecutor, WriteRefusesNonPersistentBuffersAndTooManyRows) {
  IL_REQUIRE_GPU();
  DgPlan gp = make_dg_plan();
  std::unique_ptr<plan::Executor> gpu = cuda::make_executor(gp.plan, 64, 0, "f32");
  std::vector<float> rows((kPersistentRows + 1) * kVocab, 0.0f);
  EXPECT_THROW(gpu->write(gp.probs, rows.data(), kPersistentRows + 1), Error);
  EXPECT_THROW(gpu->write(gp.logits, rows.data(), 1), Error);
}

}  // namespace
}  // namespace il::test
