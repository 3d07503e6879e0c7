// Window rows (plan::Rows::kWindows) on the CPU executor: a windows buffer of 4c columns over a
// token buffer of c columns reads each window's 4 token rows side by side (the 2×2 merge of a
// vision tower, no copy), a GEMM over window rows gives one row per window, a LayerNorm with an
// activation applies it after the norm; a token count not divisible by 4 is refused, and so are
// window buffers that do not fit their owner and non-row-wise steps on window rows.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/cpu_executor.h"
#include "core/error.h"
#include "ops/activation.h"
#include "plan/plan.h"

namespace il::test {
namespace {

constexpr std::size_t kVocab = 8, kCols = 3, kOut = 5;

float value(std::size_t i, std::size_t salt) { return static_cast<float>(static_cast<int>((i * 29 + salt * 7) % 31) - 15) / 16.0f; }

struct WindowPlan {
  plan::Plan plan;
  std::vector<float> word, w, ln_w, ln_b;
  plan::View x, y, z;
};

WindowPlan make_plan() {
  WindowPlan p;
  for (std::size_t i = 0; i < kVocab * kCols; ++i) p.word.push_back(value(i, 1));
  for (std::size_t i = 0; i < kOut * 4 * kCols; ++i) p.w.push_back(value(i, 2));
  for (std::size_t i = 0; i < kOut; ++i) {
    p.ln_w.push_back(1.0f + value(i, 3) / 4);
    p.ln_b.push_back(value(i, 4) / 2);
  }
  plan::Plan& plan = p.plan;
  const plan::BufferId x = plan.add_buffer("x", plan::Rows::kTokens, kCols);
  const plan::BufferId windows = plan.add_buffer_over("windows", plan::Rows::kWindows, 4 * kCols, x);
  const plan::BufferId y = plan.add_buffer("y", plan::Rows::kWindows, kOut);
  const plan::BufferId z = plan.add_buffer("z", plan::Rows::kWindows, kOut);
  p.x = plan.whole(x);
  p.y = plan.whole(y);
  p.z = plan.whole(z);
  plan::EmbedStep e;
  e.word = plan.add_weight("word", {kVocab, kCols}, p.word);
  e.out = p.x;
  plan.add_step("main", "embed", e);
  plan::GemmStep g;
  g.x = plan.whole(windows);
  g.w = plan.add_weight("w", {kOut, 4 * kCols}, p.w);
  g.y = p.y;
  plan.add_step("main", "merge", g);
  plan::LayerNormStep n;
  n.x = p.y;
  n.w = plan.add_weight("ln.w", {kOut}, p.ln_w);
  n.b = plan.add_weight("ln.b", {kOut}, p.ln_b);
  n.eps = 1e-5f;
  n.out = p.z;
  n.act = Activation::kGeluErf;
  plan.add_step("main", "norm+gelu", n);
  return p;
}

plan::Batch make_batch(std::size_t tokens) {
  plan::Batch b;
  for (std::size_t t = 0; t < tokens; ++t) b.tokens.push_back(static_cast<int32_t>((t * 5 + 1) % kVocab));
  b.seq_starts = {0, static_cast<int32_t>(tokens)};
  return b;
}

TEST(PlanWindows, AGemmOverWindowRowsReadsEachWindowsTokensSideBySide) {
  WindowPlan p = make_plan();
  const std::vector<float> word = p.word, w = p.w, ln_w = p.ln_w, ln_b = p.ln_b;
  cpu::CpuExecutor exec(p.plan, 16, 1);
  const plan::Batch batch = make_batch(12);
  exec.set_batch(batch);
  exec.run("main");
  std::vector<float> y(3 * kOut), z(3 * kOut);
  exec.read(p.y, y.data());
  exec.read(p.z, z.data());
  for (std::size_t win = 0; win < 3; ++win) {
    std::vector<double> want(kOut, 0.0);
    for (std::size_t o = 0; o < kOut; ++o)
      for (std::size_t j = 0; j < 4; ++j)  // token 4·win + j, column c at j·kCols + c
        for (std::size_t c = 0; c < kCols; ++c)
          want[o] += static_cast<double>(w[o * 4 * kCols + j * kCols + c]) *
                     word[static_cast<std::size_t>(batch.tokens[4 * win + j]) * kCols + c];
    double mean = 0, var = 0;
    for (double v : want) mean += v / kOut;
    for (double v : want) var += (v - mean) * (v - mean) / kOut;
    for (std::size_t o = 0; o < kOut; ++o) {
      EXPECT_NEAR(y[win * kOut + o], want[o], 1e-5) << "window " << win << " column " << o;
      const double normed = (want[o] - mean) / std::sqrt(var + 1e-5) * ln_w[o] + ln_b[o];
      const double gelu = 0.5 * normed * (1.0 + std::erf(normed / std::sqrt(2.0)));
      EXPECT_NEAR(z[win * kOut + o], gelu, 1e-5) << "window " << win << " column " << o;
    }
  }
  exec.set_batch(make_batch(10));  // 10 tokens are not whole windows
  EXPECT_THROW(exec.run("main"), Error);
}

TEST(PlanWindows, WindowBuffersMustFitAndOnlyRowWiseStepsUseThem) {
  plan::Plan plan;
  const plan::BufferId x = plan.add_buffer("x", plan::Rows::kTokens, 6);
  EXPECT_NO_THROW(plan.add_buffer_over("w24", plan::Rows::kWindows, 24, x));  // the 4-row reshape
  EXPECT_NO_THROW(plan.add_buffer_over("w6", plan::Rows::kWindows, 6, x));    // plain reuse
  EXPECT_THROW(plan.add_buffer_over("w12", plan::Rows::kWindows, 12, x), Error);
  EXPECT_THROW(plan.add_buffer_over("t24", plan::Rows::kTokens, 24, x), Error);
  const plan::BufferId win = plan.add_buffer("win", plan::Rows::kWindows, 8);
  plan::RopeStep r{plan.whole(win), 1, 8, 8, 10000.0f};
  EXPECT_THROW(plan.add_step("main", "rope", r), Error);
  EXPECT_EQ(plan::capacity_rows(plan.buffers().at(static_cast<std::size_t>(win)), 10), 3u);
}

}  // namespace
}  // namespace il::test
