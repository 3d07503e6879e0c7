// Persistent buffers (plan::Rows::kPersistent) on the CUDA executor: the program of
// ../unit/persistent_plan.h run over batches of other shapes, repeated so that their buckets are
// captured as CUDA graphs and replayed (IL_CUDA_GRAPHS=always): the accumulated rows survive
// set_batch, eager runs, capture and replay, and equal the host's account bit for bit (f32, and
// bf16 with each sum rounded); in f32 the CUDA executor matches the CPU executor run over the
// same batches. A step over more launched rows than a persistent buffer holds is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "backends/cpu/cpu_executor.h"
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"
#include "gpu_test_util.h"
#include "../unit/persistent_plan.h"

namespace il::test {
namespace {

std::vector<float> read_all(plan::Executor& exec, const plan::View& v) {
  std::vector<float> out(kAccRows * v.cols);
  exec.read(v, out.data());
  return out;
}

// Repeats put one bucket through eager, capture and replay runs; the others come in between.
const std::vector<std::vector<int32_t>> kShapes = {{4},       {4},       {4},  {2, 3},   {2, 3},   {2, 3},
                                                   {5, 1, 6}, {4},       {9},  {5, 1, 6}, {5, 1, 6}, {2, 3},
                                                   {4},       {1, 1, 40}, {4}, {9},       {9}};

TEST(GpuPersistentBuffers, KeepTheirContentsThroughGraphReplays) {
  IL_REQUIRE_GPU();
  for (const char* dtype : {"f32", "bf16"}) {
    const bool bf16 = std::string(dtype) == "bf16";
    PersistentPlan p = make_persistent_plan();
    PersistentPlan cpu_plan = make_persistent_plan();
    std::unique_ptr<plan::Executor> exec;
    {
      const ScopedEnv graphs("IL_CUDA_GRAPHS", "always");
      exec = cuda::make_executor(p.plan, 64, 0, dtype);
    }
    cpu::CpuExecutor cpu_exec(cpu_plan.plan, 64, 2);
    std::vector<float> want(kAccRows * kAccCols, 0.0f);
    ASSERT_EQ(read_all(*exec, p.acc), want) << dtype << ": zeroed when the executor is built";
    int32_t salt = 0;
    for (const auto& lengths : kShapes) {
      const plan::Batch batch = persistent_batch(lengths, salt++);
      exec->set_batch(batch);
      ASSERT_EQ(read_all(*exec, p.acc), want) << dtype << ": set_batch changed a persistent buffer";
      exec->run("accumulate");
      account(want, p.word, batch, bf16);
      ASSERT_EQ(read_all(*exec, p.acc), want) << dtype << ", batch " << salt;
      if (bf16) continue;
      cpu_exec.set_batch(batch);
      cpu_exec.run("accumulate");
      ASSERT_EQ(read_all(cpu_exec, cpu_plan.acc), want);
      // The norm sums in f32 on the GPU, in double on the CPU; the GEMM's order differs.
      const auto normed = read_all(*exec, p.normed), proj = read_all(*exec, p.proj);
      EXPECT_LE(rel_error(normed, read_all(cpu_exec, cpu_plan.normed)), 1e-6) << "batch " << salt;
      EXPECT_LE(rel_error(proj, read_all(cpu_exec, cpu_plan.proj)), 1e-5) << "batch " << salt;
    }
    EXPECT_GT(exec->captured_graphs(), 0u) << dtype;
    EXPECT_NE(want, std::vector<float>(kAccRows * kAccCols, 0.0f));
    std::printf("[persistent] %s: %zu runs, %zu graphs captured, accumulated rows exact\n", dtype, kShapes.size(),
                exec->captured_graphs());
  }
}

TEST(GpuPersistentBuffers, AStepOverMoreRowsThanABufferHoldsIsRefused) {
  IL_REQUIRE_GPU();
  PersistentPlan p = make_persistent_plan();
  std::unique_ptr<plan::Executor> exec = cuda::make_executor(p.plan, 64, 0, "f32");
  // 6 tokens launch as a bucket of 8 rows; "normed" holds 4.
  exec->set_batch(persistent_batch({2, 4}, 0));
  try {
    exec->run("overflow");
    ADD_FAILURE() << "8 token rows written into a persistent buffer of 4";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("normed"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace il::test
