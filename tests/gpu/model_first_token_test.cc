// The first-token programs (models/bert.h: the last layer for each sequence's first token only)
// against the full encoder on CUDA, in every precision, on the fixtures whose output reads first
// tokens alone (the CLS-pooled embedding model and the cross-encoders): one ragged batch of all
// the fixture's inputs through one executor, both paths. f32: within 1e-5 of the output's scale
// (the GEMMs run on B rows instead of T, and cuBLASLt may pick another algorithm for them).
// f16 / bf16: the full path's attention rounds P to the element type and sums it on tensor cores,
// the first-row kernel stays in f32, so the two differ by rounding only: embeddings at cosine
// ≥ 0.9999, scores within 1 % (f16) / 4 % (bf16) of max(|score|, 1).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "backends/cuda/cuda_backend.h"
#include "fixture.h"
#include "gpu_test_util.h"
#include "models/embedding_head.h"
#include "models/registry.h"
#include "runtime/batching.h"

namespace il::test {
namespace {

class GpuFirstTokenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuFirstTokenTest, SameOutputsAsTheFullEncoderInEveryPrecision) {
  IL_REQUIRE_GPU();
  const Fixture f = load_fixture(GetParam());
  std::vector<TokenInput> inputs;
  for (const auto* list : {&f.cases, &f.id_cases})
    for (const FixtureCase& c : *list) inputs.push_back(c.input);
  std::size_t tokens = 0;
  for (const TokenInput& in : inputs) tokens += in.ids.size();
  const plan::Batch batch = runtime::make_batch(inputs, {0, inputs.size()});
  const bool ce = f.kind == "cross_encoder";
  for (const char* dtype : {"f32", "f16", "bf16"}) {
    models::BuiltModel model = models::build_model_from_folder(f.dir);  // an executor takes the weights
    const models::Programs first =
        ce ? models::scoring_programs(model.plan) : models::embedding_programs(model.plan, PoolingMode::kCls);
    ASSERT_EQ(first.encoder, "encode_first") << "IL_FIRST_TOKEN=0 in the environment?";
    const std::string full_head = ce ? "ce_head" : models::pooling_program(PoolingMode::kCls);
    const plan::View out = model.plan.output(ce ? "scores" : "embedding");
    auto exec = cuda::make_executor(model.plan, tokens, 0, dtype);
    exec->set_batch(batch);
    std::vector<float> want(inputs.size() * out.cols), got(want.size());
    exec->run("encode");
    exec->run(full_head);
    exec->read(out, want.data());
    exec->run(first.encoder);
    exec->run(first.head);
    exec->read(out, got.data());
    double diff = 0.0, scale = 1.0, worst_cos = 1.0;
    for (std::size_t r = 0; r < inputs.size(); ++r) {
      double dot = 0.0, na = 0.0, nb = 0.0;
      for (std::size_t j = 0; j < out.cols; ++j) {
        const double a = want[r * out.cols + j], b = got[r * out.cols + j];
        diff = std::max(diff, std::abs(a - b));
        scale = std::max(scale, std::abs(a));
        dot += a * b;
        na += a * a;
        nb += b * b;
      }
      if (!ce) worst_cos = std::min(worst_cos, dot / std::sqrt(na * nb));
    }
    std::printf("[gpu first token] %s %s: %zu inputs, max difference %.3g (scale %.3g), min cosine %.7f\n",
                GetParam().c_str(), dtype, inputs.size(), diff, scale, worst_cos);
    const std::string d = dtype;
    if (d == "f32") {
      EXPECT_LE(diff, 1e-5 * scale) << dtype;
    } else if (ce) {
      EXPECT_LE(diff, (d == "f16" ? 1e-2 : 4e-2) * scale) << dtype;
    } else {
      EXPECT_GE(worst_cos, 0.9999) << dtype;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GpuFirstTokenTest,
                         ::testing::Values("bert-cls", "bert-ce", "jina-ce", "xlmr-ce", "xlmr-ce2"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace il::test
