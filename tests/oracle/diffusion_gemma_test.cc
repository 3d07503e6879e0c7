// DiffusionGemma against transformers 5.17 (tools/oracle/make_diffusion_gemma_fixtures.py: a
// tiny random DiffusionGemmaForBlockDiffusion — 2 sliding + 2 full layers, the full ones without
// v_proj and with their own head dim and KV heads, 6 experts top-2, every parameter and both
// stacks' layer_scalar randomised, a 15-token prompt against a sliding window of 6): the canvas
// forward's softcapped logits after the prompt is encoded, without and with self-conditioning.
// CPU, f32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "fixture.h"
#include "inferencelayer/engine.h"
#include "runtime/diffusion_generator.h"

namespace il::test {
namespace {

std::filesystem::path folder() { return fixtures_root() / "diffusion-gemma"; }

nlohmann::json expected() {
  std::ifstream in(folder() / "expected.json");
  return nlohmann::json::parse(in);
}

// Pages of 4 entries: the prompts and canvases cross page ends.
std::unique_ptr<Engine> load(std::size_t max_batch_tokens = 0) {
  EngineOptions o;
  if (max_batch_tokens) o.max_batch_tokens = max_batch_tokens;
  o.device = "cpu";
  o.kv_page_size = 4;
  o.kv_cache_tokens = 256;
  return Engine::load(folder(), o);
}

Matrix rows_of(const nlohmann::json& v) {
  Matrix m(v.size(), v.at(0).size());
  for (std::size_t i = 0; i < m.rows; ++i)
    for (std::size_t j = 0; j < m.cols; ++j) m.row(i)[j] = v[i][j].get<float>();
  return m;
}

double max_abs(const Matrix& a, const Matrix& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i)
    m = std::max(m, std::abs(static_cast<double>(a.data[i]) - b.data[i]));
  return m;
}

TEST(DiffusionGemma, DescribesItselfAndIgnoresTheVisionTower) {
  auto e = load();
  const ModelInfo& i = e->info();
  EXPECT_EQ(i.model_type, "diffusion_gemma");
  EXPECT_EQ(i.layout, "diffusion-gemma");
  EXPECT_FALSE(i.capabilities.embed);
  bool noted = false;
  for (const std::string& n : i.notes) noted = noted || n.find("vision tower") != std::string::npos;
  EXPECT_TRUE(noted) << "info must say the checkpoint's vision tower is not read";
  EXPECT_THROW(e->embed({TokenInput{{1, 2}}}, {}), Error);
}

// The gate: max-abs ≤ 2e-3 on the logits (softcapped to ±30; measured: see the output).
TEST(DiffusionGemma, CanvasLogitsMatchTransformers) {
  auto e = load();
  const nlohmann::json x = expected();
  ASSERT_EQ(x.at("forward_cases").size(), 3u);
  for (const auto& c : x.at("forward_cases")) {
    const std::string name = c.at("name");
    const std::vector<int32_t> prompt = c.at("prompt_ids"), canvas = c.at("canvas_ids");
    const Matrix plain = e->canvas_logits(prompt, canvas, nullptr);
    const Matrix sc_in = rows_of(c.at("sc_logits"));
    const Matrix sc = e->canvas_logits(prompt, canvas, &sc_in);
    const double err_plain = max_abs(plain, rows_of(c.at("plain").at("logits")));
    const double err_sc = max_abs(sc, rows_of(c.at("sc").at("logits")));
    std::printf("[diffusion-gemma cpu f32] %s: logits max-abs %.3g, with self-conditioning %.3g\n", name.c_str(),
                err_plain, err_sc);
    EXPECT_LE(err_plain, 2e-3) << name;
    EXPECT_LE(err_sc, 2e-3) << name;
  }
}

// A canvas forward leaves the cache as it was: the same call twice gives the same logits, and
// a second sequence's calls in between do not disturb the first's.
TEST(DiffusionGemma, CanvasForwardsAreIndependent) {
  auto e = load();
  const std::vector<int32_t> prompt = {5, 9, 14, 3, 77, 101, 2}, canvas = {1, 2, 3, 4, 5, 6, 7, 8};
  const Matrix a = e->canvas_logits(prompt, canvas, nullptr);
  (void)e->canvas_logits({40, 41, 42}, {9, 9, 9, 9, 9, 9, 9, 9}, nullptr);
  const Matrix b = e->canvas_logits(prompt, canvas, nullptr);
  EXPECT_EQ(a.data, b.data);
}

// Requests submitted together share every canvas forward (their canvases rows of one batch) and
// still answer exactly as each does alone: per-request seeds, per-row arithmetic.
TEST(DiffusionGemma, RequestsDenoisedTogetherAnswerAsAlone) {
  auto e = load();
  std::vector<GenerationRequest> rs(4);
  for (std::size_t i = 0; i < rs.size(); ++i) {
    rs[i].input_ids = {static_cast<int32_t>(3 + i), 17, 44, static_cast<int32_t>(90 + i), 8};
    rs[i].input_ids.resize(5 + 3 * i, 21);  // prompts of different lengths
    rs[i].options.seed = 100 + i;
    rs[i].diffusion.max_new_tokens = 20;   // three canvases
    rs[i].diffusion.max_denoising_steps = 5;
  }
  const std::vector<GenerationResult> together = e->generate(rs);
  ASSERT_EQ(together.size(), rs.size());
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const std::vector<GenerationResult> alone = e->generate({rs[i]});
    EXPECT_EQ(together[i].tokens, alone[0].tokens) << "request " << i;
    EXPECT_FALSE(alone[0].tokens.empty());
  }
}

// generation_config.json's max_length as transformers 5.17's block-diffusion generate applies it
// (generation_diffusion_gemma.py, _prepare_generated_length and MaxLengthCriteria): it replaces
// max_new_tokens by max_length − prompt while max_new_tokens is the default 256, and otherwise
// ends generation after the canvas that reaches it.
TEST(DiffusionGemma, MaxLengthBoundsTheCanvasesAsTransformers) {
  models::DiffusionSettings s;
  const auto blocks = [&](std::optional<int> max_length, int max_new_tokens, std::size_t prompt) {
    s.max_length = max_length;
    s.max_new_tokens = max_new_tokens;
    return runtime::diffusion_blocks(s, prompt, 8);
  };
  EXPECT_EQ(blocks(std::nullopt, 20, 15), 3u);
  EXPECT_EQ(blocks(std::nullopt, 256, 15), 32u);
  EXPECT_EQ(blocks(40, 256, 15), 4u);   // 25 new tokens
  EXPECT_EQ(blocks(16, 256, 15), 1u);   // 1 new token: one canvas
  EXPECT_EQ(blocks(15, 256, 15), 0u);   // nothing to generate
  EXPECT_EQ(blocks(40, 20, 15), 3u);    // max_new_tokens first
  EXPECT_EQ(blocks(30, 64, 15), 2u);    // 15 + 16 ≥ 30 after the second canvas
  EXPECT_EQ(blocks(10, 64, 15), 1u);    // checked after the first canvas
  EXPECT_EQ(blocks(8192, 256, 15), 1023u);
  s.max_new_tokens_from_request = true;  // a request's own 256 is not the default
  EXPECT_EQ(runtime::diffusion_blocks(s, 15, 8), 32u);
  s.max_new_tokens_from_request = false;

  // The folder's file: a copy of the fixture with max_length 40 and no max_new_tokens.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("il_dgemma_max_length_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors"})
    std::filesystem::copy_file(folder() / f, dir / f, std::filesystem::copy_options::overwrite_existing);
  nlohmann::json g = nlohmann::json::parse(std::ifstream(folder() / "generation_config.json"));
  g.erase("max_new_tokens");
  g["max_length"] = 40;
  std::ofstream(dir / "generation_config.json") << g.dump();
  EngineOptions o;
  o.device = "cpu";
  o.kv_page_size = 4;
  o.kv_cache_tokens = 256;
  auto e = Engine::load(dir, o);
  const auto request = [](std::size_t prompt, std::optional<std::size_t> max_new_tokens) {
    GenerationRequest r;
    for (std::size_t i = 0; i < prompt; ++i) r.input_ids.push_back(static_cast<int32_t>(3 + (7 * i) % 100));
    r.options.seed = 5;
    r.options.stop_ids = std::vector<int32_t>{};  // no end ids: every canvas is committed whole
    r.diffusion.max_denoising_steps = 1;
    r.diffusion.max_new_tokens = max_new_tokens;
    return r;
  };
  EXPECT_EQ(e->generate({request(15, std::nullopt)})[0].tokens.size(), 32u);
  EXPECT_EQ(e->generate({request(15, 64)})[0].tokens.size(), 32u);
  EXPECT_EQ(e->generate({request(15, 12)})[0].tokens.size(), 16u);
  EXPECT_EQ(e->generate({request(40, 8)})[0].tokens.size(), 8u);
  try {
    e->generate({request(40, std::nullopt)});
    ADD_FAILURE() << "a prompt at max_length was accepted";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("max_length of 40"), std::string::npos) << err.what();
  }
  e.reset();
  std::filesystem::remove_all(dir);
}

// Requests that commit different numbers of blocks at different step counts leave the running
// batch at different times, so the canvases behind them move down a slot (their
// self-conditioning rows with them); with room for two canvases a forward, the others wait and
// join as slots free. Each still answers as it does alone.
TEST(DiffusionGemma, RequestsThatLeaveEarlyOrWaitAnswerAsAlone) {
  for (std::size_t budget : {std::size_t{0}, std::size_t{16}}) {
    auto e = load(budget);
    std::vector<GenerationRequest> rs(5);
    for (std::size_t i = 0; i < rs.size(); ++i) {
      rs[i].input_ids = {static_cast<int32_t>(5 + i), 30, static_cast<int32_t>(60 + 2 * i), 9};
      rs[i].options.seed = 7 + i;
      rs[i].diffusion.max_new_tokens = std::vector<std::size_t>{8, 24, 16, 8, 32}[i];
      rs[i].diffusion.max_denoising_steps = std::vector<int>{4, 2, 5, 3, 4}[i];
      rs[i].diffusion.no_early_stop = true;
      rs[i].options.stop_ids = std::vector<int32_t>{};
    }
    const std::vector<GenerationResult> together = e->generate(rs);
    ASSERT_EQ(together.size(), rs.size());
    for (std::size_t i = 0; i < rs.size(); ++i) {
      const std::vector<GenerationResult> alone = e->generate({rs[i]});
      EXPECT_EQ(together[i].tokens, alone[0].tokens) << "budget " << budget << ", request " << i;
      EXPECT_EQ(together[i].tokens.size(), rs[i].diffusion.max_new_tokens.value());
    }
  }
}

TEST(DiffusionGemma, BadCanvasRequestsAreRefused) {
  auto e = load();
  const std::vector<int32_t> canvas(8, 1);
  EXPECT_THROW(e->canvas_logits({}, canvas, nullptr), Error);                 // empty prompt
  EXPECT_THROW(e->canvas_logits({1, 2}, {1, 2, 3}, nullptr), Error);         // not canvas_length ids
  EXPECT_THROW(e->canvas_logits({1, 128}, canvas, nullptr), Error);          // outside the vocabulary
  Matrix narrow(8, 5);
  EXPECT_THROW(e->canvas_logits({1, 2}, canvas, &narrow), Error);            // sc rows of the wrong width
  const std::vector<int32_t> long_prompt(300, 3);
  EXPECT_THROW(e->canvas_logits(long_prompt, canvas, nullptr), Error);       // more than the cache holds
  // The engine still answers after the refusals.
  EXPECT_NO_THROW(e->canvas_logits({1, 2}, canvas, nullptr));
}

}  // namespace
}  // namespace il::test
