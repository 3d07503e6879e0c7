// Multi-axis rope through a plan on the CPU executor: Batch::rope_positions reach the step axis by
// axis (the executor's result equals ops::rope_cpu given the same axes), a batch with too few axes
// is refused by the step, and check_batch refuses rope positions that are not whole axes of the
// tokens, too many axes or negative values.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_executor.h"
#include "core/error.h"
#include "ops/rope.h"
#include "plan/plan.h"

namespace il::test {
namespace {

constexpr std::size_t kVocab = 8, kCols = 2 * 12;  // two heads of 12, rotary 8 of them

struct RopePlan {
  plan::Plan plan;
  std::vector<float> word;
  plan::View x;
};

RopePlan make_rope_plan() {
  RopePlan p;
  for (std::size_t i = 0; i < kVocab * kCols; ++i) p.word.push_back(static_cast<float>((i * 37) % 23) / 11.0f - 1.0f);
  const plan::WeightId word = p.plan.add_weight("word", {kVocab, kCols}, p.word);
  p.x = p.plan.whole(p.plan.add_buffer("x", plan::Rows::kTokens, kCols));
  plan::EmbedStep e;
  e.word = word;
  e.out = p.x;
  p.plan.add_step("main", "embed", e);
  plan::RopeStep r{p.x, 2, 12, 8, 100.0f, false};
  r.sections = {3, 1};
  r.sections_restart = true;
  r.freq_dim = 6;
  p.plan.add_step("main", "rope", r);
  return p;
}

plan::Batch make_batch(std::size_t axes) {
  plan::Batch b;
  b.tokens = {1, 5, 2, 7, 0};
  b.seq_starts = {0, 2, 5};
  for (std::size_t a = 0; a < axes; ++a)
    for (std::size_t t = 0; t < b.tokens.size(); ++t) b.rope_positions.push_back(static_cast<int32_t>(t * 3 + a * 11));
  return b;
}

TEST(PlanRopeAxes, TheExecutorRotatesEachGroupByItsAxis) {
  RopePlan p = make_rope_plan();
  const std::vector<float> word = p.word;
  cpu::CpuExecutor exec(p.plan, 16, 1);
  const plan::Batch batch = make_batch(3);  // a third axis, unused, is allowed
  exec.set_batch(batch);
  exec.run("main");
  std::vector<float> got(batch.num_tokens() * kCols);
  exec.read(p.x, got.data());

  std::vector<float> want;
  for (int32_t t : batch.tokens) want.insert(want.end(), word.begin() + t * kCols, word.begin() + (t + 1) * kCols);
  const std::vector<float> before = want;
  const std::vector<int> sections{3, 1};
  ops::RopeArgs a{ops::f32_view(want.data(), kCols), batch.rope_positions.data(), batch.num_tokens(), 2, 12, 8, 100.0f};
  a.sections = sections;
  a.sections_restart = true;
  a.freq_dim = 6;
  a.axis_stride = batch.num_tokens();
  ThreadPool pool(1);
  ops::rope_cpu(a, pool);
  EXPECT_EQ(got, want);
  EXPECT_NE(got, before) << "nothing rotated: the test could not fail";

  // The same values read from Batch::positions (one axis) instead differ: the axes were used.
  plan::Batch single = make_batch(2);
  single.positions = std::vector<int32_t>(single.rope_positions.begin(), single.rope_positions.begin() + 5);
  single.rope_positions.assign(single.rope_positions.begin(), single.rope_positions.begin() + 5);
  single.rope_positions.insert(single.rope_positions.end(), single.positions.begin(), single.positions.end());
  exec.set_batch(single);  // both axes equal to axis 0: a different rotation for the second group
  exec.run("main");
  std::vector<float> same_axis(got.size());
  exec.read(p.x, same_axis.data());
  EXPECT_NE(same_axis, got);
}

TEST(PlanRopeAxes, TooFewAxesAreRefusedByTheStep) {
  RopePlan p = make_rope_plan();
  cpu::CpuExecutor exec(p.plan, 16, 1);
  exec.set_batch(make_batch(1));
  EXPECT_THROW(exec.run("main"), Error);
  exec.set_batch(make_batch(0));
  EXPECT_THROW(exec.run("main"), Error);
}

TEST(PlanRopeAxes, CheckBatchRefusesMalformedRopePositions) {
  plan::Batch b = make_batch(2);
  EXPECT_NO_THROW(plan::check_batch(b, 16));
  b.rope_positions.pop_back();  // not whole axes
  EXPECT_THROW(plan::check_batch(b, 16), Error);
  b = make_batch(2);
  b.rope_positions[7] = -1;
  EXPECT_THROW(plan::check_batch(b, 16), Error);
  b = make_batch(plan::kMaxRopeAxes + 1);
  EXPECT_THROW(plan::check_batch(b, 16), Error);
  EXPECT_NO_THROW(plan::check_batch(make_batch(plan::kMaxRopeAxes), 16));
}

}  // namespace
}  // namespace il::test
