// DeepSeek-OCR-2 against transformers 5.17 (tools/oracle/make_deepseek_ocr_fixtures.py, a tiny
// random DeepseekOcr2ForConditionalGeneration saved by save_pretrained: the original checkpoint
// names, one tensor per expert): the decoder on text-only prompts — the last position's logits
// and 20 greedy tokens (transformers recomputing the whole sequence per step; ours through the
// KV cache). CPU, f32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "fixture.h"
#include "inferencelayer/engine.h"

namespace il::test {
namespace {

struct TextCase {
  std::string name;
  std::vector<int32_t> input_ids, greedy;
  std::vector<float> last_logits;
  std::vector<std::vector<float>> step_logits;
};

std::vector<TextCase> text_cases() {
  std::ifstream f(fixtures_root() / "deepseek-ocr2" / "expected.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  std::vector<TextCase> out;
  for (const auto& c : j.at("text_cases")) {
    TextCase t;
    t.name = c.at("name").get<std::string>();
    t.input_ids = c.at("input_ids").get<std::vector<int32_t>>();
    t.greedy = c.at("greedy").get<std::vector<int32_t>>();
    t.last_logits = c.at("last_logits").get<std::vector<float>>();
    t.step_logits = c.at("step_logits").get<std::vector<std::vector<float>>>();
    out.push_back(std::move(t));
  }
  return out;
}

std::unique_ptr<Engine> load() {
  EngineOptions o;
  o.device = "cpu";
  o.kv_page_size = 4;
  o.kv_cache_tokens = 256;
  return Engine::load(fixtures_root() / "deepseek-ocr2", o);
}

GenerationRequest request(const TextCase& c) {
  GenerationRequest r;
  r.input_ids = c.input_ids;
  r.options.max_new_tokens = c.greedy.size();
  r.options.stop_ids = std::vector<int32_t>{};  // transformers ran without an end id
  return r;
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

TEST(DeepseekOcr2, RefusesImagesUntilItsVisionTowerExists) {
  auto e = load();
  GenerationRequest r = request(text_cases().at(0));
  PatchImage im;
  im.grid_thw = {1, 2, 2};
  im.patch_dim = 4;
  im.rows.assign(16, 0.0f);
  r.images.push_back(im);
  EXPECT_THROW(e->generate({r}), Error);
}

}  // namespace
}  // namespace il::test
