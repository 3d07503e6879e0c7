// The selected-row programs (models/layers.h: "encode_first" / "encode_last" with their
// "pool_selected_*" / "ce_head_*" heads) against the full encoder on every fixture whose output
// reads one token per sequence: the CLS-pooled embedding model and the cross-encoders (first
// token), the Qwen3 embedder and reranker (last token). One ragged batch of all the fixture's inputs, on the
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
  const bool last = model.pooling == PoolingMode::kLastToken || model.layout == "qwen3-reranker";
  ASSERT_TRUE(model.plan.has_program(last ? "encode_last" : "encode_first"));
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
    ASSERT_NE(model.pooling, PoolingMode::kMean) << "only a CLS- or last-token-pooled model reads one row alone";
  }
  const models::Programs first =
      ce ? models::scoring_programs(model.plan) : models::embedding_programs(model.plan, model.pooling);
  ASSERT_EQ(first.encoder, last ? "encode_last" : "encode_first") << "IL_FIRST_TOKEN=0 in the environment?";
  const std::string full_head = ce ? "ce_head" : models::pooling_program(model.pooling);
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
  // The selected program reuses the full last layer's storage: the full path must still be right after it.
  std::vector<float> again(want.size());
  exec.run("encode");
  exec.run(full_head);
  exec.read(out, again.data());
  EXPECT_EQ(again, want);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FirstTokenTest,
                         ::testing::Values("bert-cls", "bert-ce", "jina-ce", "xlmr-ce", "xlmr-ce2", "qwen3-embed",
                                           "qwen3-rerank", "modernbert-ce-cls"),
                         [](const auto& info) { return fixture_test_name(info.param); });

}  // namespace
}  // namespace il::test
