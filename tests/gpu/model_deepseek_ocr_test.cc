// DeepSeek-OCR-2 (tests/fixtures/deepseek-ocr2, a tiny random DeepseekOcr2ForConditionalGeneration)
// and DeepSeek-OCR v1 (tests/fixtures/deepseek-ocr, composed from transformers modules: its CLIP
// tower and newline layout instead of the query encoder) on CUDA against transformers 5.17's outputs (tests/oracle/deepseek_ocr_fixture.h): SAM's
// windowed and global attention with relative position, the gathered convolutions, the encoder's
// prefix-causal attention, the mixture-of-experts decoder through the paged cache.
// - f32: vision rows and last logits within 1e-3 of transformers, greedy tokens identical for the
//   three pages generated together and for the text prompts.
// - f16 / bf16: cosine ≥ 0.999 of the vision rows and of the last logits to transformers' f32;
//   their greedy tokens are printed beside transformers' (not a gate: a random tiny model's close
//   logits may flip a pick).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "deepseek_ocr_fixture.h"
#include "fixture.h"
#include "gpu_test_util.h"
#include "inferencelayer/engine.h"

namespace il::test {
namespace {

std::unique_ptr<Engine> load(const std::string& dtype, const std::string& folder) {
  EngineOptions o;
  o.device = "cuda:0";
  o.dtype = dtype;
  o.kv_page_size = 4;
  o.kv_cache_tokens = 2048;
  return Engine::load(fixtures_root() / folder, o);
}

double cosine(const float* a, const double* b, std::size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ab += a[i] * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += b[i] * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

void check(const std::string& dtype, const std::string& folder = "deepseek-ocr2") {
  auto e = load(dtype, folder);
  const bool f32 = dtype == "f32";
  const std::vector<PageCase> cases = page_cases(folder);
  std::vector<GenerationRequest> requests;
  for (const PageCase& c : cases) {
    const std::vector<Matrix> rows = e->vision_rows({c.page});
    ASSERT_EQ(rows.at(0).data.size(), c.vision.size()) << c.name;
    double err = 0.0;
    for (std::size_t i = 0; i < c.vision.size(); ++i) err = std::max(err, std::abs(rows[0].data[i] - c.vision.values[i]));
    const double cos = cosine(rows[0].data.data(), c.vision.values.data(), c.vision.size());
    std::printf("[%s cuda %s] %s: vision rows max-abs %.3g, cosine %.6f\n", folder.c_str(), dtype.c_str(), c.name.c_str(), err,
                cos);
    if (f32)
      EXPECT_LE(err, 1e-3) << c.name;
    else
      EXPECT_GE(cos, 0.999) << c.name;
    requests.push_back(page_request(c));
  }
  const Matrix logits = e->prompt_logits(requests);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    double err = 0.0;
    std::vector<double> want(cases[i].last_logits.begin(), cases[i].last_logits.end());
    for (std::size_t v = 0; v < logits.cols; ++v) err = std::max(err, std::abs(logits.row(i)[v] - want[v]));
    const double cos = cosine(logits.row(i), want.data(), logits.cols);
    std::printf("[%s cuda %s] %s: last logits max-abs %.3g, cosine %.6f\n", folder.c_str(), dtype.c_str(),
                cases[i].name.c_str(), err, cos);
    if (f32)
      EXPECT_LE(err, 1e-3) << cases[i].name;
    else
      EXPECT_GE(cos, 0.999) << cases[i].name;
  }
  const std::vector<GenerationResult> got = e->generate(requests);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (f32) {
      EXPECT_EQ(got[i].tokens, cases[i].greedy) << cases[i].name;
    } else {
      std::size_t same = 0;
      while (same < got[i].tokens.size() && same < cases[i].greedy.size() && got[i].tokens[same] == cases[i].greedy[same])
        ++same;
      std::printf("[%s cuda %s] %s: first %zu of %zu greedy tokens as transformers'\n", folder.c_str(), dtype.c_str(),
                  cases[i].name.c_str(), same, cases[i].greedy.size());
    }
  }
  if (!f32 || folder != "deepseek-ocr2") return;
  std::vector<GenerationRequest> text;
  for (const TextCase& c : text_cases()) {
    GenerationRequest r;
    r.input_ids = c.input_ids;
    r.options.max_new_tokens = c.greedy.size();
    r.options.stop_ids = std::vector<int32_t>{};
    text.push_back(std::move(r));
  }
  const std::vector<GenerationResult> t = e->generate(text);
  const std::vector<TextCase> tc = text_cases();
  for (std::size_t i = 0; i < tc.size(); ++i) EXPECT_EQ(t[i].tokens, tc[i].greedy) << tc[i].name;
}

TEST(DeepseekOcr2Gpu, F32MatchesTransformers) {
  IL_REQUIRE_GPU();
  check("f32");
}

TEST(DeepseekOcr2Gpu, F16CloseToTransformers) {
  IL_REQUIRE_GPU();
  check("f16");
}

TEST(DeepseekOcr2Gpu, Bf16CloseToTransformers) {
  IL_REQUIRE_GPU();
  check("bf16");
}

TEST(DeepseekOcrV1Gpu, F32MatchesTheReference) {
  IL_REQUIRE_GPU();
  check("f32", "deepseek-ocr");
}

TEST(DeepseekOcrV1Gpu, F16CloseToTheReference) {
  IL_REQUIRE_GPU();
  check("f16", "deepseek-ocr");
}

TEST(DeepseekOcrV1Gpu, Bf16CloseToTheReference) {
  IL_REQUIRE_GPU();
  check("bf16", "deepseek-ocr");
}

}  // namespace
}  // namespace il::test
