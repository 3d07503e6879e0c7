// Engine lanes on CUDA (EngineOptions::lanes): several encoder passes in flight at once, one
// stream and scratch each over one copy of the weights. Threads calling the engine at once must
// get exactly the bits one lane gives alone (the same kernels and the same tuned GEMM choices,
// graphs captured per lane), for every precision; a generating model keeps one lane, and so
// does the CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "fixture.h"
#include "gpu_test_util.h"
#include "inferencelayer/engine.h"

namespace il::test {
namespace {

// Batches of different sizes (different graph buckets) cut from the fixture's inputs.
std::vector<std::vector<TokenInput>> batches_of(const std::vector<TokenInput>& inputs) {
  std::vector<std::vector<TokenInput>> out;
  for (std::size_t size : {1u, 2u, 3u, 5u, 8u}) {
    std::vector<TokenInput> b;
    for (std::size_t i = 0; i < size; ++i) b.push_back(inputs[(out.size() + i) % inputs.size()]);
    out.push_back(std::move(b));
  }
  return out;
}

bool same_bits(const Matrix& a, const Matrix& b) {
  return a.rows == b.rows && a.cols == b.cols && std::equal(a.data.begin(), a.data.end(), b.data.begin());
}

TEST(GpuEngineLanes, ThreadsAtOnceGetWhatOneLaneGives) {
  IL_REQUIRE_GPU();
  const Fixture f = load_fixture("bert-mean");
  const std::vector<std::vector<TokenInput>> batches = batches_of(all_inputs(f));
  for (const char* dtype : {"f32", "f16", "bf16"}) {
    SCOPED_TRACE(dtype);
    EngineOptions one;
    one.device = "cuda";
    one.dtype = dtype;
    std::vector<Matrix> ref;
    {
      auto engine = Engine::load(f.dir, one);
      ASSERT_EQ(engine->lanes(), 1u);
      for (const auto& b : batches) ref.push_back(engine->embed(b, {}));
    }
    EngineOptions three = one;
    three.lanes = 3;
    auto engine = Engine::load(f.dir, three);
    ASSERT_EQ(engine->lanes(), 3u);
    // Four threads on three lanes: one always waits for a lane. Each runs every batch many
    // times (eager runs, capture, replays), starting at a different one.
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (std::size_t i = 0; i < 40; ++i) {
          const std::size_t k = (t + i) % batches.size();
          if (!same_bits(engine->embed(batches[k], {}), ref[k])) ++mismatches[t];
        }
      });
    for (std::thread& t : threads) t.join();
    for (std::size_t t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
    EXPECT_GT(engine->cuda_graphs(), 0u);  // replays were part of it
  }
}

TEST(GpuEngineLanes, TheCpuAndGeneratingModelsKeepOneLane) {
  IL_REQUIRE_GPU();
  EngineOptions cpu;
  cpu.device = "cpu";
  cpu.lanes = 4;
  EXPECT_EQ(Engine::load(load_fixture("bert-mean").dir, cpu)->lanes(), 1u);
  EngineOptions gpu;
  gpu.device = "cuda";
  gpu.lanes = 4;
  EXPECT_EQ(Engine::load(fixtures_root() / "glm-ocr", gpu)->lanes(), 1u);
}

}  // namespace
}  // namespace il::test
