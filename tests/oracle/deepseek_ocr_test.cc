// DeepSeek-OCR-2 against transformers 5.17 (tools/oracle/make_deepseek_ocr_fixtures.py, a tiny
// random DeepseekOcr2ForConditionalGeneration saved by save_pretrained: the original checkpoint
// names, one tensor per expert). Pages: a view at the position table's size, one that needs the
// tables resized (up), and a tiled page (tiles that need them resized down, windows padded): the
// vision rows the decoder reads, the last position's logits and 20 greedy tokens; and the decoder
// alone on text prompts (transformers recomputing the whole sequence per step; ours through the
// KV cache). CPU, f32. DeepSeek-OCR (v1), which transformers 5.17 lacks, against the same cases
// composed from transformers modules (tools/oracle/deepseek_ocr_v1_reference.py: SAM with v1
// widths, CLIPEncoder layers, the linear projector over [clip | sam], newline-per-row layout, the
// same decoder) from the original folder's config.json and tensor names.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "deepseek_ocr_fixture.h"
#include "fixture.h"
#include "inferencelayer/engine.h"

namespace il::test {
namespace {

std::unique_ptr<Engine> load(const std::string& folder = "deepseek-ocr2") {
  EngineOptions o;
  o.device = "cpu";
  o.kv_page_size = 4;
  o.kv_cache_tokens = 2048;
  return Engine::load(fixtures_root() / folder, o);
}

GenerationRequest request(const TextCase& c) {
  GenerationRequest r;
  r.input_ids = c.input_ids;
  r.options.max_new_tokens = c.greedy.size();
  r.options.stop_ids = std::vector<int32_t>{};  // transformers ran without an end id
  return r;
}

// Each page's vision rows (the projector's output with image_newline and the separator) within
// 1e-4 of the fixture's, for either folder.
void expect_vision_rows_match(const std::string& folder, const char* label) {
  auto e = load(folder);
  const std::vector<PageCase> cases = page_cases(folder);
  ASSERT_EQ(cases.size(), 3u);
  for (const PageCase& c : cases) {
    const std::vector<Matrix> rows = e->vision_rows({c.page});
    ASSERT_EQ(rows.size(), 1u);
    ASSERT_EQ(rows[0].data.size(), c.vision.size()) << c.name;
    double err = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < c.vision.size(); ++i) {
      err = std::max(err, std::abs(rows[0].data[i] - c.vision.values[i]));
      scale = std::max(scale, std::abs(c.vision.values[i]));
    }
    std::printf("[%s cpu f32] %s: %zu vision rows max-abs %.3g (largest %.3g)\n", label, c.name.c_str(),
                rows[0].rows, err, scale);
    EXPECT_LE(err, 1e-4) << c.name;
  }
}

// The pages' last prompt logits within 1e-4 of the fixture's, then the three pages generated
// together: each its fixture's greedy tokens.
void expect_page_logits_and_tokens_match(const std::string& folder, const char* label) {
  auto e = load(folder);
  const std::vector<PageCase> cases = page_cases(folder);
  std::vector<GenerationRequest> requests;
  for (const PageCase& c : cases) requests.push_back(page_request(c));
  const Matrix logits = e->prompt_logits(requests);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    double err = 0.0;
    for (std::size_t v = 0; v < logits.cols; ++v)
      err = std::max(err, std::abs(static_cast<double>(logits.row(i)[v]) - cases[i].last_logits[v]));
    std::printf("[%s cpu f32] %s: last logits max-abs %.3g\n", label, cases[i].name.c_str(), err);
    EXPECT_LE(err, 1e-4) << cases[i].name;
  }
  const std::vector<GenerationResult> got = e->generate(requests);
  for (std::size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(got[i].tokens, cases[i].greedy) << cases[i].name;
}

TEST(DeepseekOcr2, DescribesItself) {
  auto e = load();
  const ModelInfo& i = e->info();
  EXPECT_EQ(i.model_type, "deepseek_ocr2");
  EXPECT_EQ(i.layout, "deepseek-ocr2");
  EXPECT_TRUE(i.capabilities.generate);
  EXPECT_FALSE(i.capabilities.embed);
}

TEST(DeepseekOcr2, DecoderLastLogitsMatchTransformers) {
  auto e = load();
  const std::vector<TextCase> cases = text_cases();
  ASSERT_EQ(cases.size(), 2u);
  std::vector<GenerationRequest> requests;
  for (const TextCase& c : cases) requests.push_back(request(c));
  const Matrix logits = e->prompt_logits(requests);
  ASSERT_EQ(logits.rows, cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    ASSERT_EQ(logits.cols, cases[i].last_logits.size());
    double err = 0.0;
    for (std::size_t v = 0; v < logits.cols; ++v)
      err = std::max(err, std::abs(static_cast<double>(logits.row(i)[v]) - cases[i].last_logits[v]));
    std::printf("[deepseek-ocr2 cpu f32] %s: last logits max-abs %.3g\n", cases[i].name.c_str(), err);
    EXPECT_LE(err, 1e-4) << cases[i].name;
  }
}

// Both prompts together (one prefill batch, then decode steps over the paged cache).
TEST(DeepseekOcr2, DecoderGreedyTokensMatchTransformers) {
  auto e = load();
  const std::vector<TextCase> cases = text_cases();
  std::vector<GenerationRequest> requests;
  for (const TextCase& c : cases) requests.push_back(request(c));
  const std::vector<GenerationResult> got = e->generate(requests);
  ASSERT_EQ(got.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(got[i].tokens, cases[i].greedy) << cases[i].name;
    EXPECT_EQ(got[i].finish, FinishReason::kLength) << cases[i].name;
  }
}

TEST(DeepseekOcr2, VisionRowsMatchTransformers) { expect_vision_rows_match("deepseek-ocr2", "deepseek-ocr2"); }

// The three pages generated together: 20 greedy tokens each, as transformers'.
TEST(DeepseekOcr2, PagesLastLogitsMatchTransformers) {
  expect_page_logits_and_tokens_match("deepseek-ocr2", "deepseek-ocr2");
}

TEST(DeepseekOcr2, RefusesPagesThatDoNotFitTheirPrompt) {
  auto e = load();
  const std::vector<PageCase> cases = page_cases();
  GenerationRequest r;
  r.input_ids = cases.at(0).input_ids;
  r.options.max_new_tokens = 4;
  r.images = {cases.at(2).page};  // the tiled page gives more rows than this prompt has placeholders
  EXPECT_THROW(e->generate({r}), Error);
  r.images = {cases.at(0).page};
  r.images[0].view_sides = {7};  // a side the model has no tables for
  EXPECT_THROW(e->generate({r}), Error);
  r.images = {cases.at(0).page};
  r.images[0].rows.pop_back();
  EXPECT_THROW(e->generate({r}), Error);
}

TEST(DeepseekOcrV1, DescribesItself) {
  auto e = load("deepseek-ocr");
  const ModelInfo& i = e->info();
  EXPECT_EQ(i.model_type, "deepseek_vl_v2");
  EXPECT_EQ(i.layout, "deepseek-ocr");
  EXPECT_TRUE(i.capabilities.generate);
  EXPECT_TRUE(i.capabilities.ocr);
}

// Native view (CLIP's table as stored), a view whose SAM and CLIP tables are resized (up), and a
// 3 × 2 grid of tiles (tables resized down, windows padded) with the global view.
TEST(DeepseekOcrV1, VisionRowsMatchTheReference) { expect_vision_rows_match("deepseek-ocr", "deepseek-ocr v1"); }

TEST(DeepseekOcrV1, PagesLastLogitsAndGreedyTokensMatchTheReference) {
  expect_page_logits_and_tokens_match("deepseek-ocr", "deepseek-ocr v1");
}

// A batch budget below a tiled page's patches (all its views together) but above each view and
// each prompt: the page is admitted alone and its views run in several vision batches; the
// tokens are the reference's. (The page used to wait forever for a batch that could hold it.)
TEST(DeepseekOcrV1, APageLargerThanOneBatchStillRuns) {
  const std::vector<PageCase> cases = page_cases("deepseek-ocr");
  std::size_t widest_view = 0, largest_page = 0, longest_prompt = 0;
  for (const PageCase& c : cases) {
    for (int side : c.page.view_sides)
      widest_view = std::max(widest_view, static_cast<std::size_t>(side) * static_cast<std::size_t>(side));
    largest_page = std::max(largest_page, c.page.rows.size() / c.page.patch_dim);
    longest_prompt = std::max(longest_prompt, c.input_ids.size());
  }
  const std::size_t budget = std::max(widest_view, longest_prompt);
  ASSERT_LT(budget, largest_page) << "the fixture has a page of several views";
  EngineOptions o;
  o.device = "cpu";
  o.kv_page_size = 4;
  o.kv_cache_tokens = 2048;
  o.max_batch_tokens = budget;
  auto e = Engine::load(fixtures_root() / "deepseek-ocr", o);
  std::vector<GenerationRequest> requests;
  for (const PageCase& c : cases) requests.push_back(page_request(c));
  const std::vector<GenerationResult> got = e->generate(requests);
  for (std::size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(got[i].tokens, cases[i].greedy) << cases[i].name;
}

TEST(DeepseekOcrV1, RefusesTilesWithoutTheirGrid) {
  auto e = load("deepseek-ocr");
  const std::vector<PageCase> cases = page_cases("deepseek-ocr");
  GenerationRequest r = page_request(cases.at(2));
  r.images[0].tile_grid = {2, 2};  // 6 tiles
  EXPECT_THROW(e->generate({r}), Error);
  r.images[0].tile_grid = {};
  EXPECT_THROW(e->generate({r}), Error);
}

}  // namespace
}  // namespace il::test
