// The first-token programs (models/bert.h: "encode_first" with "pool_first" / "ce_head_first")
// against the full encoder on every fixture whose output reads first tokens only: the CLS-pooled
// embedding model and the cross-encoders. One ragged batch of all the fixture's inputs, on the
// CPU executor directly, so both paths run in one process. The transformers comparison of the
// path the engine takes by default is oracle_test.cc's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "backends/cpu/cpu_executor.h"
#include "fixture.h"
#include "models/embedding_head.h"
#include "models/registry.h"
#include "runtime/batching.h"

namespace il::test {
namespace {

class FirstTokenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FirstTokenTest, SameOutputsAsTheFullEncoder) {
  const Fixture f = load_fixture(GetParam());
  models::BuiltModel model = models::build_model_from_folder(f.dir);
  ASSERT_TRUE(model.plan.has_program("encode_first"));
  const std::vector<TokenInput> inputs = all_inputs(f);
  std::size_t tokens = 0;
  for (const TokenInput& in : inputs) tokens += in.ids.size();
  plan::Batch batch = runtime::make_batch(inputs, {0, inputs.size()});
  // An empty sequence second (the executors accept one; the engine never sends it): both paths
  // must pool it to zeros.
  batch.seq_starts.insert(batch.seq_starts.begin() + 1, batch.seq_starts[1]);
  const std::size_t seqs = inputs.size() + 1;

  const bool ce = f.kind == "cross_encoder";
  if (!ce) {
    ASSERT_EQ(model.pooling, PoolingMode::kCls) << "only a CLS-pooled model reads first tokens alone";
  }
  const models::Programs first =
      ce ? models::scoring_programs(model.plan) : models::embedding_programs(model.plan, PoolingMode::kCls);
  ASSERT_EQ(first.encoder, "encode_first") << "IL_FIRST_TOKEN=0 in the environment?";
  const std::string full_head = ce ? "ce_head" : models::pooling_program(PoolingMode::kCls);
  const plan::View out = model.plan.output(ce ? "scores" : "embedding");

  cpu::CpuExecutor exec(model.plan, tokens, 2);
  exec.set_batch(batch);
  std::vector<float> want(seqs * out.cols), got(want.size());
  exec.run("encode");
  exec.run(full_head);
  exec.read(out, want.data());
  exec.run(first.encoder);
  exec.run(first.head);
  exec.read(out, got.data());
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  std::printf("[first token] %s: %zu sequences (one empty), %zu tokens, max difference %.3g (output scale %.3g)\n",
              GetParam().c_str(), seqs, tokens, diff, scale);
  EXPECT_LE(diff, 1e-6 * std::max(scale, 1.0));
  // "encode_first" reuses the full last layer's storage: the full path must still be right after it.
  std::vector<float> again(want.size());
  exec.run("encode");
  exec.run(full_head);
  exec.read(out, again.data());
  EXPECT_EQ(again, want);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FirstTokenTest,
                         ::testing::Values("bert-cls", "bert-ce", "jina-ce", "xlmr-ce", "xlmr-ce2"));

}  // namespace
}  // namespace il::test
