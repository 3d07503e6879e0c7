// GLM-OCR (tests/fixtures/glm-ocr, a tiny random GlmOcrForConditionalGeneration) generating on
// CUDA, against transformers 5.17's outputs (tests/oracle/glm_ocr_fixture.h) and the CPU engine:
// the vision tower into the persistent image rows, the prefill with the rows injected and M-RoPE,
// the paged KV cache written by kv_write and read by cached attention in decode steps, the head.
// - f32: merger rows and last logits within 1e-3 of transformers (the gate), greedy
//   tokens identical for the four prompts generated together (and with the repetition penalty
//   and the n-gram guard), with CUDA graphs forced so the decode steps replay captured graphs.
// - f16 / bf16: cosine ≥ 0.999 of the merger rows (per image) and of the last logits (per
//   prompt) to transformers' f32; the tokens they generate are printed beside transformers' (a
//   random tiny model's close logits may flip a greedy pick, which is not a gate).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "fixture.h"
#include "glm_ocr_fixture.h"
#include "gpu_test_util.h"
#include "inferencelayer/engine.h"

namespace il::test {
namespace {

std::unique_ptr<Engine> load(const std::string& dtype) {
  EngineOptions o;
  o.device = "cuda:0";
  o.dtype = dtype;
  o.kv_page_size = 4;
  o.kv_cache_tokens = 512;
  return Engine::load(fixtures_root() / "glm-ocr", o);
}

double max_abs(const std::vector<float>& a, const float* b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

double cosine(const float* a, const float* b, std::size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

std::vector<float> flat(const std::vector<Matrix>& rows) {
  std::vector<float> out;
  for (const Matrix& m : rows) out.insert(out.end(), m.data.begin(), m.data.end());
  return out;
}

TEST(GlmOcrGpu, F32MatchesTransformers) {
  IL_REQUIRE_GPU();
  ScopedEnv graphs("IL_CUDA_GRAPHS", "always");
  auto e = load("f32");
  const std::vector<GlmCase> cases = load_glm_cases();
  for (const GlmCase& c : cases) {
    if (c.request.images.empty()) continue;
    const std::vector<float> got = flat(e->vision_rows(c.request.images));
    ASSERT_EQ(got.size(), c.vision.size());
    const double err = max_abs(c.vision, got.data());
    std::printf("[glm-ocr cuda f32] %s: merger rows max-abs %.3g\n", c.name.c_str(), err);
    EXPECT_LE(err, 1e-3) << c.name;
  }
  const Matrix logits = e->prompt_logits(glm_requests(cases));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const double err = max_abs(cases[i].last_logits, logits.row(i));
    std::printf("[glm-ocr cuda f32] %s: last logits max-abs %.3g\n", cases[i].name.c_str(), err);
    EXPECT_LE(err, 1e-3) << cases[i].name;
  }
  // Twice: the second run replays the graphs the first captured.
  for (int run = 0; run < 2; ++run) {
    const auto got = e->generate(glm_requests(cases));
    for (std::size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(got[i].tokens, cases[i].greedy) << cases[i].name;
  }
  std::vector<GenerationRequest> rp = glm_requests(cases), nr = glm_requests(cases);
  for (auto& r : rp) r.options.repetition_penalty = 1.3f;
  for (auto& r : nr) r.options.no_repeat_ngram = 2;
  const auto got_rp = e->generate(rp);
  const auto got_nr = e->generate(nr);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(got_rp[i].tokens, cases[i].greedy_rp) << cases[i].name;
    EXPECT_EQ(got_nr[i].tokens, cases[i].greedy_nr) << cases[i].name;
  }
  EXPECT_GT(e->cuda_graphs(), 0u);
}

// The same prompts queued for a cache that holds one at a time: sequences join as pages free,
// and each decode batch has another shape; the tokens do not change.
TEST(GlmOcrGpu, SequencesQueueForASmallCache) {
  IL_REQUIRE_GPU();
  EngineOptions o;
  o.device = "cuda:0";
  o.dtype = "f32";
  o.kv_page_size = 4;
  o.kv_cache_tokens = 48;
  auto e = Engine::load(fixtures_root() / "glm-ocr", o);
  const std::vector<GlmCase> cases = load_glm_cases();
  const auto got = e->generate(glm_requests(cases));
  for (std::size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(got[i].tokens, cases[i].greedy) << cases[i].name;
}

class GlmOcrGpuHalf : public ::testing::TestWithParam<std::string> {};

TEST_P(GlmOcrGpuHalf, RowsAndLogitsWithinTheCosineGate) {
  IL_REQUIRE_GPU();
  auto e = load(GetParam());
  const std::vector<GlmCase> cases = load_glm_cases();
  for (const GlmCase& c : cases) {
    if (c.request.images.empty()) continue;
    const std::vector<float> got = flat(e->vision_rows(c.request.images));
    ASSERT_EQ(got.size(), c.vision.size());
    const double cos = cosine(got.data(), c.vision.data(), got.size());
    std::printf("[glm-ocr cuda %s] %s: merger rows cosine %.7f\n", GetParam().c_str(), c.name.c_str(), cos);
    EXPECT_GE(cos, 0.999) << c.name;
  }
  const Matrix logits = e->prompt_logits(glm_requests(cases));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const double cos = cosine(logits.row(i), cases[i].last_logits.data(), logits.cols);
    std::printf("[glm-ocr cuda %s] %s: last logits cosine %.7f\n", GetParam().c_str(), cases[i].name.c_str(), cos);
    EXPECT_GE(cos, 0.999) << cases[i].name;
  }
  const auto got = e->generate(glm_requests(cases));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::size_t same = 0;
    while (same < got[i].tokens.size() && got[i].tokens[same] == cases[i].greedy[same]) ++same;
    std::printf("[glm-ocr cuda %s] %s: greedy tokens equal transformers' f32 for the first %zu of %zu\n",
                GetParam().c_str(), cases[i].name.c_str(), same, cases[i].greedy.size());
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GlmOcrGpuHalf, ::testing::Values("f16", "bf16"));

}  // namespace
}  // namespace il::test
