// Persistent buffers (plan::Rows::kPersistent) on the CPU executor: contents kept across runs and
// batches of other shapes, rows fixed by the plan, steps refused where they would write past a
// buffer, and the plan's checks (see persistent_plan.h for the program).
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/cpu_executor.h"
#include "core/error.h"
#include "persistent_plan.h"

namespace il::test {
namespace {

std::vector<float> read_all(plan::Executor& exec, const plan::View& v, std::size_t rows) {
  std::vector<float> out(rows * v.cols);
  exec.read(v, out.data());
  return out;
}

TEST(PersistentBuffers, KeepTheirContentsAcrossRunsAndBatches) {
  PersistentPlan p = make_persistent_plan();
  cpu::CpuExecutor exec(p.plan, 64, 2);
  std::vector<float> want(kAccRows * kAccCols, 0.0f);
  EXPECT_EQ(read_all(exec, p.acc, kAccRows), want) << "zeroed when the executor is built";
  // Batches of other token and sequence counts, some repeated; each at least kAccRows tokens.
  const std::vector<std::vector<int32_t>> shapes = {{4}, {2, 3}, {2, 3}, {5, 1, 6}, {4}, {9}, {1, 1, 1, 1, 40}};
  int32_t salt = 0;
  for (const auto& lengths : shapes) {
    const plan::Batch batch = persistent_batch(lengths, salt++);
    exec.set_batch(batch);
    ASSERT_EQ(read_all(exec, p.acc, kAccRows), want) << "set_batch changed a persistent buffer";
    exec.run("accumulate");
    account(want, p.word, batch, false);
    const std::vector<float> acc = read_all(exec, p.acc, kAccRows);
    ASSERT_EQ(acc, want) << "after batch " << salt;
    // normed = RMS-norm(acc) · ln, proj = acc · Wᵀ, over the persistent rows.
    const std::vector<float> normed = read_all(exec, p.normed, kAccRows), proj = read_all(exec, p.proj, kAccRows);
    for (std::size_t r = 0; r < kAccRows; ++r) {
      double sq = 0.0;
      for (std::size_t j = 0; j < kAccCols; ++j) sq += static_cast<double>(acc[r * kAccCols + j]) * acc[r * kAccCols + j];
      const double inv = 1.0 / std::sqrt(sq / kAccCols + 1e-6);
      for (std::size_t j = 0; j < kAccCols; ++j)
        EXPECT_NEAR(normed[r * kAccCols + j], acc[r * kAccCols + j] * inv * p.ln[j], 1e-5) << r << ", " << j;
      for (std::size_t c = 0; c < kProjCols; ++c) {
        double y = 0.0;
        for (std::size_t j = 0; j < kAccCols; ++j) y += static_cast<double>(acc[r * kAccCols + j]) * p.w[c * kAccCols + j];
        EXPECT_NEAR(proj[r * kProjCols + c], y, 1e-4 * std::max(1.0, std::abs(y))) << r << ", " << c;
      }
    }
  }
  EXPECT_NE(want, std::vector<float>(kAccRows * kAccCols, 0.0f));
}

TEST(PersistentBuffers, AStepOverMoreRowsThanABufferHoldsIsRefused) {
  PersistentPlan p = make_persistent_plan();
  cpu::CpuExecutor exec(p.plan, 64, 1);
  exec.set_batch(persistent_batch({3}, 0));
  EXPECT_NO_THROW(exec.run("overflow"));  // 3 token rows into 4
  exec.set_batch(persistent_batch({2, 4}, 0));
  try {
    exec.run("overflow");
    ADD_FAILURE() << "6 token rows written into a persistent buffer of 4";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("normed"), std::string::npos) << e.what();
  }
}

TEST(PersistentBuffers, PlanChecks) {
  plan::Plan plan;
  const plan::BufferId tokens = plan.add_buffer("tokens", plan::Rows::kTokens, 8);
  const plan::BufferId kept = plan.add_persistent_buffer("kept", 3, 8);
  EXPECT_EQ(plan.buffers()[static_cast<std::size_t>(kept)].fixed_rows, 3u);
  EXPECT_EQ(plan::capacity_rows(plan.buffers()[static_cast<std::size_t>(kept)], 100), 3u);
  EXPECT_EQ(plan::capacity_rows(plan.buffers()[static_cast<std::size_t>(tokens)], 100), 100u);
  EXPECT_THROW(plan.add_buffer("no rows", plan::Rows::kPersistent, 8), Error);
  EXPECT_THROW(plan.add_persistent_buffer("empty", 0, 8), Error);
  EXPECT_THROW(plan.add_persistent_buffer("narrow", 3, 0), Error);
  // Storage is never shared with a persistent buffer, either way.
  EXPECT_THROW(plan.add_buffer_over("over kept", plan::Rows::kTokens, 8, kept), Error);
  EXPECT_THROW(plan.add_buffer_over("kept over", plan::Rows::kPersistent, 8, tokens), Error);
  // Steps that index rows by token or sequence may not touch persistent rows (yet).
  plan::EmbedStep e;
  e.out = plan.whole(kept);
  EXPECT_THROW(plan.add_step("p", "embed", e), Error);
  plan::RopeStep r;
  r.x = plan.whole(kept);
  r.heads = 1;
  r.head_dim = r.rotary_dim = 8;
  EXPECT_THROW(plan.add_step("p", "rope", r), Error);
  plan::AttentionStep a;
  a.q = a.v = a.out = plan.whole(tokens);
  a.k = plan.whole(kept);
  EXPECT_THROW(plan.add_step("p", "attention", a), Error);
  plan::PoolStep pool;
  pool.x = plan.whole(tokens);
  pool.out = plan.whole(kept);
  EXPECT_THROW(plan.add_step("p", "pool", pool), Error);
  // Row-wise steps may.
  plan::L2Step l2;
  l2.x = plan.whole(kept);
  EXPECT_NO_THROW(plan.add_step("p", "l2", l2));
  plan::GluStep glu;
  glu.x = plan.whole(tokens);
  glu.out = plan.slice(kept, 0, 4);
  EXPECT_NO_THROW(plan.add_step("p", "glu", glu));
}

}  // namespace
}  // namespace il::test
