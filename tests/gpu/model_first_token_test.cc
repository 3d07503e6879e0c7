// The selected-row programs (models/layers.h: the last layer for one token of each sequence only,
// its first for CLS pooling and BERT-style cross-encoders, its last for last-token pooling and
// Qwen3's reranker) against the full encoder on CUDA, in every precision, on the fixtures whose
// output reads those tokens alone. One ragged batch of all the fixture's inputs plus an empty
// sequence, through one executor that captures CUDA graphs as soon as it can
// (IL_CUDA_GRAPHS=always): each path runs three times (eager, capture, replay), and the full path
// once more after the selected one, whose buffers share its storage.
// - f32: the two paths within 1e-5 of the output's scale (the GEMMs run on B rows instead of T,
//   and cuBLASLt may pick another algorithm for them).
// - f16 / bf16: the one-row kernel keeps P in f32 where the full path's attention rounds it,
//   so the two differ by rounding. Against the f32 CPU engine (the transformers-parity class),
//   the selected path must be about as accurate as the full one: its worst error at most
//   twice the full path's plus a floor of the type's rounding (cosine deficit 4u², scores 2u of
//   max(1, |score|); u the type's unit roundoff).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "backends/cpu/cpu_executor.h"
#include "backends/cuda/cuda_backend.h"
#include "fixture.h"
#include "gpu_test_util.h"
#include "models/embedding_head.h"
#include "models/registry.h"
#include "runtime/batching.h"

namespace il::test {
namespace {

// Worst error of `got` against `ref`, row by row: 1 − cosine (embeddings) or
// |Δ| / max(1, |ref|) (scores).
double worst_error(const std::vector<float>& got, const std::vector<float>& ref, std::size_t cols, bool scores) {
  double worst = 0.0;
  for (std::size_t r = 0; r * cols < ref.size(); ++r) {
    double dot = 0.0, na = 0.0, nb = 0.0, d = 0.0;
    for (std::size_t j = 0; j < cols; ++j) {
      const double a = got[r * cols + j], b = ref[r * cols + j];
      dot += a * b;
      na += a * a;
      nb += b * b;
      d = std::max(d, std::abs(a - b) / std::max(1.0, std::abs(b)));
    }
    if (scores) worst = std::max(worst, d);
    else if (na > 0.0 && nb > 0.0) worst = std::max(worst, 1.0 - dot / std::sqrt(na * nb));
    else worst = std::max(worst, d);  // the empty sequence: zeros on every path
  }
  return worst;
}

class GpuFirstTokenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuFirstTokenTest, SameOutputsAsTheFullEncoderInEveryPrecision) {
  IL_REQUIRE_GPU();
  const Fixture f = load_fixture(GetParam());
  const std::vector<TokenInput> inputs = all_inputs(f);
  std::size_t tokens = 0;
  for (const TokenInput& in : inputs) tokens += in.ids.size();
  plan::Batch batch = runtime::make_batch(inputs, {0, inputs.size()});
  batch.seq_starts.insert(batch.seq_starts.begin() + 1, batch.seq_starts[1]);  // an empty sequence second
  const bool ce = f.kind == "cross_encoder";
  const PoolingMode pooling = models::build_model_from_folder(f.dir).pooling;  // kCls or kLastToken
  const std::string full_head = ce ? "ce_head" : models::pooling_program(pooling);

  // The f32 reference: the CPU engine's full path.
  std::vector<float> ref;
  {
    models::BuiltModel model = models::build_model_from_folder(f.dir);
    const plan::View out = model.plan.output(ce ? "scores" : "embedding");
    cpu::CpuExecutor exec(model.plan, tokens, 0);
    exec.set_batch(batch);
    exec.run("encode");
    exec.run(full_head);
    ref.resize(batch.num_seqs() * out.cols);
    exec.read(out, ref.data());
  }

  for (const char* dtype : {"f32", "f16", "bf16"}) {
    models::BuiltModel model = models::build_model_from_folder(f.dir);  // an executor takes the weights
    const models::Programs first =
        ce ? models::scoring_programs(model.plan) : models::embedding_programs(model.plan, pooling);
    ASSERT_TRUE(first.encoder == "encode_first" || first.encoder == "encode_last")
        << first.encoder << ": IL_FIRST_TOKEN=0 in the environment?";
    const plan::View out = model.plan.output(ce ? "scores" : "embedding");
    std::unique_ptr<plan::Executor> exec;
    {
      const ScopedEnv graphs("IL_CUDA_GRAPHS", "always");
      exec = cuda::make_executor(model.plan, tokens, 0, dtype);
    }
    exec->set_batch(batch);
    const auto run = [&](const std::string& encoder, const std::string& head) {
      std::vector<float> v(ref.size());
      for (int i = 0; i < 3; ++i) {  // eager, captured, replayed
        exec->run(encoder);
        exec->run(head);
      }
      exec->read(out, v.data());
      return v;
    };
    const std::vector<float> want = run("encode", full_head);
    const std::vector<float> got = run(first.encoder, first.head);
    EXPECT_EQ(run("encode", full_head), want) << dtype << ": the full path changed after the first-token one";
    EXPECT_GT(exec->captured_graphs(), 0u) << dtype;

    double diff = 0.0, scale = 1.0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      diff = std::max(diff, std::abs(static_cast<double>(got[i]) - want[i]));
      scale = std::max(scale, std::abs(static_cast<double>(want[i])));
    }
    const double err_full = worst_error(want, ref, out.cols, ce), err_first = worst_error(got, ref, out.cols, ce);
    std::printf("[gpu selected rows] %s %s (%s): %zu sequences (one empty), paths differ by %.3g (scale %.3g); "
                "worst %s against the f32 CPU engine: full %.3g, selected %.3g\n",
                GetParam().c_str(), dtype, first.encoder.c_str(), batch.num_seqs(), diff, scale,
                ce ? "relative score error" : "cosine deficit", err_full, err_first);
    const std::string d = dtype;
    if (d == "f32") {
      EXPECT_LE(diff, 1e-5 * scale);
    } else {
      const double u = d == "f16" ? 0x1p-11 : 0x1p-8;
      EXPECT_LE(err_first, 2.0 * err_full + (ce ? 2.0 * u : 4.0 * u * u)) << dtype;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GpuFirstTokenTest,
                         ::testing::Values("bert-cls", "bert-ce", "jina-ce", "xlmr-ce", "xlmr-ce2", "qwen3-embed",
                                           "qwen3-rerank", "modernbert-ce-cls"),
                         [](const auto& info) { return fixture_test_name(info.param); });

}  // namespace
}  // namespace il::test
