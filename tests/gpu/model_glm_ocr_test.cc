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
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

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

// Chunked prefill on the device (tests/oracle/glm_ocr_fixture.h): prompt chunks ride in the decode
// batches, attending to their earlier chunks through the paged cache with the whole prompt's
// M-RoPE positions; graphs forced, so chunk batches replay captured shapes too. Twice: the second
// run replays what the first captured. The tokens are transformers'.
TEST(GlmOcrGpu, ChunkedPrefillMatchesTransformers) {
  IL_REQUIRE_GPU();
  ScopedEnv graphs("IL_CUDA_GRAPHS", "always");
  EngineOptions o;
  o.device = "cuda:0";
  o.dtype = "f32";
  o.kv_page_size = 4;
  o.kv_cache_tokens = 512;
  o.prefill_tokens_per_step = 3;
  auto e = Engine::load(fixtures_root() / "glm-ocr", o);
  const std::vector<GlmCase> cases = load_glm_cases();
  for (int run = 0; run < 2; ++run) {
    const ChunkedPrefillRun r = run_chunked_prefill(*e, cases);
    for (std::size_t c = 0; c < 4; ++c) EXPECT_EQ(r.streamed.at(c), cases[c].greedy) << cases[c].name << ", run " << run;
    EXPECT_EQ(r.first_step.at(3), 4);
    EXPECT_TRUE(r.page_decoded_every_step);
  }
}

// Page bytes to tokens on the device, as the ocr command runs it: the pipeline fixture's folder
// (tests/fixtures/glm-ocr-pipeline: tokenizer, image processor, PNG pages; transformers'
// Glm46VProcessor + generate recorded), f32, the guard off: the tokens transformers generated.
TEST(GlmOcrGpu, PagesFromPngBytesMatchTransformers) {
  IL_REQUIRE_GPU();
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("il_glm_ocr_pipeline_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"})
    fs::copy_file(fixtures_root() / "glm-ocr" / f, dir / f, fs::copy_options::overwrite_existing);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "preprocessor_config.json"})
    fs::copy_file(fixtures_root() / "glm-ocr-pipeline" / f, dir / f, fs::copy_options::overwrite_existing);
  EngineOptions o;
  o.device = "cuda:0";
  o.dtype = "f32";
  o.kv_page_size = 4;
  o.kv_cache_tokens = 512;
  auto e = Engine::load(dir, o);
  std::ifstream in(fixtures_root() / "glm-ocr-pipeline" / "expected.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  std::vector<GenerationRequest> requests;
  for (const auto& c : expected.at("cases")) {
    std::ifstream png(fixtures_root() / "glm-ocr-pipeline" / c.at("page").get<std::string>(), std::ios::binary);
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(png)), std::istreambuf_iterator<char>());
    GenerationRequest r = e->ocr_request(e->load_prompt_image(bytes, c.at("page").get<std::string>()),
                                         c.at("task").get<std::string>());
    EXPECT_EQ(r.input_ids, c.at("input_ids").get<std::vector<int32_t>>());
    r.options.no_repeat_ngram = 0;
    r.options.max_new_tokens = c.at("greedy").size();
    requests.push_back(std::move(r));
  }
  const auto got = e->generate(requests);
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].tokens, expected.at("cases")[i].at("greedy").get<std::vector<int32_t>>()) << "case " << i;
    EXPECT_EQ(e->decode(got[i].tokens, true), expected.at("cases")[i].at("greedy_text").get<std::string>());
  }
  fs::remove_all(dir);
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
