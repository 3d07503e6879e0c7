// EngineOptions.device: "cpu", "cuda", "cuda:N", "auto"; anything else is an error, and a CUDA
// request without a GPU runs on the CPU (with a notice on stderr) and gives the CPU's results.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.h"
#include "fixture.h"
#include "gpu_test_util.h"
#include "inferencelayer/engine.h"

namespace il::test {
namespace {

std::filesystem::path model_dir() { return fixtures_root() / "bert-mean"; }

double max_abs(const Matrix& a, const Matrix& b) {
  if (a.data.size() != b.data.size()) return INFINITY;
  return max_abs_finite(a.data.data(), b.data.data(), a.data.size());
}

EngineOptions with_device(const std::string& device) {
  EngineOptions o;
  o.device = device;
  return o;
}

TEST(DeviceOption, RejectsUnknownDeviceNames) {
  for (const char* d : {"tpu", "cuda:", "cuda:x", "cuda:-1", "CUDA", "gpu"})
    EXPECT_THROW(Engine::load(model_dir(), with_device(d)), Error) << d;
}

TEST(DeviceOption, CudaWithoutAGpuFallsBackToTheCpu) {
  if (gpu_count() > 0) GTEST_SKIP() << "SKIPPED: a GPU is present; this checks the fallback without one";
  auto cpu = Engine::load(model_dir(), with_device("cpu"));
  const auto in = cpu->tokenize("a sentence to embed");
  const Matrix want = cpu->embed({in}, {});
  for (const char* d : {"cuda", "cuda:0", "auto"}) {
    auto e = Engine::load(model_dir(), with_device(d));
    const Matrix got = e->embed({in}, {});
    EXPECT_LE(max_abs(got, want), 1e-6) << d;
  }
}

TEST(DeviceOption, CudaIndexPastTheLastDeviceIsAnError) {
  IL_REQUIRE_GPU();
  EXPECT_THROW(Engine::load(model_dir(), with_device("cuda:" + std::to_string(gpu_count()))), Error);
}

TEST(DeviceOption, AutoAndCudaAgreeOnAGpu) {
  IL_REQUIRE_GPU();
  auto a = Engine::load(model_dir(), with_device("auto"));
  auto c = Engine::load(model_dir(), with_device("cuda"));
  const auto in = a->tokenize("a sentence to embed");
  EXPECT_LE(max_abs(a->embed({in}, {}), c->embed({in}, {})), 1e-6);
}

}  // namespace
}  // namespace il::test
