// DiffusionGemma (tests/fixtures/diffusion-gemma, a tiny random DiffusionGemmaForBlockDiffusion)
// on CUDA, against transformers 5.17's canvas logits and the CPU engine: the encode program
// writing the paged KV cache (sliding layers over their window, full layers at head dim 32 with
// K = V), the canvas forward over cache + canvas with and without self-conditioning (the
// embedding read as a transposed GEMM operand), the router and experts on the device, the
// softcapped tied head.
// - f32: logits within 2e-3 of transformers (the gate), CUDA graphs forced; a whole
//   seeded generation gives the CPU engine's tokens.
// - f32 layer by layer: the CPU oracle test's points (tests/oracle/diffusion_gemma_layers.h).
// - bf16: per canvas row, cosine to transformers' f32 logits at least transformers' own bf16's
//   minus 0.01. The gate of 0.999 cannot hold on this fixture: its weights are scaled to
//   make every path count (embeddings N(0, 1), norms 1 ± 0.3, two experts of six), and
//   transformers' own bf16 forward (DiffusionGemmaForBlockDiffusion.from_pretrained(dtype=
//   torch.bfloat16), SDPA, the H200, 2026-12-02) reaches only the cosines of kTorchBf16 below.
//   Milder weights do not make it meetable: on 2026-12-04 transformers' own bf16 against its
//   f32, on this geometry with 13 other weight settings (embeddings 0.05–2, matrices 0.8–1.5 /
//   sqrt(fan_in), norms 1 ± 0.05–0.3, router gains 1–6, experts nearly equal or not), gave
//   worst row cosines of 0.28–0.94: a tiny random model is no ground for a 0.999 bf16 gate.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "backends/cuda/cuda_backend.h"
#include "diffusion_gemma_layers.h"
#include "fixture.h"
#include "gpu_test_util.h"
#include "inferencelayer/engine.h"

namespace il::test {
namespace {

std::unique_ptr<Engine> load(const std::string& device, const std::string& dtype) {
  EngineOptions o;
  o.device = device;
  o.dtype = dtype;
  o.kv_page_size = 4;
  o.kv_cache_tokens = 256;
  return Engine::load(fixtures_root() / "diffusion-gemma", o);
}

const nlohmann::json& expected() {
  static const nlohmann::json j = [] {
    std::ifstream in(fixtures_root() / "diffusion-gemma" / "expected.json");
    return nlohmann::json::parse(in);
  }();
  return j;
}

Matrix rows_of(const nlohmann::json& v) {
  Matrix m(v.size(), v.at(0).size());
  for (std::size_t i = 0; i < m.rows; ++i)
    for (std::size_t j = 0; j < m.cols; ++j) m.row(i)[j] = v[i][j].get<float>();
  return m;
}

double max_abs(const Matrix& a, const Matrix& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    const double d = std::abs(static_cast<double>(a.data[i]) - b.data[i]);
    m = std::isnan(d) ? INFINITY : std::max(m, d);
  }
  return m;
}

double min_row_cosine(const Matrix& a, const Matrix& b) {
  double worst = 1.0;
  for (std::size_t r = 0; r < a.rows; ++r) {
    double ab = 0, aa = 0, bb = 0;
    for (std::size_t j = 0; j < a.cols; ++j) {
      ab += static_cast<double>(a.row(r)[j]) * b.row(r)[j];
      aa += static_cast<double>(a.row(r)[j]) * a.row(r)[j];
      bb += static_cast<double>(b.row(r)[j]) * b.row(r)[j];
    }
    worst = std::min(worst, ab / std::sqrt(aa * bb));
  }
  return worst;
}

// transformers 5.17's bf16 forward against its f32 one on this fixture: the worst row cosine of
// each case, without and with self-conditioning (tools/oracle/diffusion_gemma_bf16_check.py, measured 2026-12-02).
const std::map<std::string, std::pair<double, double>> kTorchBf16 = {
    {"prompt15", {0.996550, 0.961931}}, {"prompt3", {0.960455, 0.990409}}, {"prompt15_then_8", {0.888980, 0.968823}}};

void check_against_transformers(const std::string& dtype) {
  auto e = load("cuda:0", dtype);
  for (const auto& c : expected().at("forward_cases")) {
    const std::string name = c.at("name");
    const std::vector<int32_t> prompt = c.at("prompt_ids"), canvas = c.at("canvas_ids");
    const Matrix sc_in = rows_of(c.at("sc_logits"));
    for (const bool with_sc : {false, true}) {
      const Matrix got = e->canvas_logits(prompt, canvas, with_sc ? &sc_in : nullptr);
      const Matrix want = rows_of(c.at(with_sc ? "sc" : "plain").at("logits"));
      const double err = max_abs(got, want), cos = min_row_cosine(got, want);
      std::printf("[diffusion-gemma cuda %s] %s%s: logits max-abs %.3g, min row cosine %.6f\n", dtype.c_str(),
                  name.c_str(), with_sc ? " +sc" : "", err, cos);
      if (dtype == "f32") {
        EXPECT_LE(err, 2e-3) << name << (with_sc ? " +sc" : "");
      } else {
        const auto& t = kTorchBf16.at(name);
        EXPECT_GE(cos, (with_sc ? t.second : t.first) - 0.01) << name << (with_sc ? " +sc" : "");
      }
    }
  }
}

TEST(DiffusionGemmaGpu, F32MatchesTransformers) {
  IL_REQUIRE_GPU();
  ScopedEnv graphs("IL_CUDA_GRAPHS", "always");
  check_against_transformers("f32");
}

TEST(DiffusionGemmaGpu, Bf16AsCloseAsTransformersOwnBf16) {
  IL_REQUIRE_GPU();
  check_against_transformers("bf16");
}

// Layer by layer on CUDA f32 (diffusion_gemma_layers.h: the CPU oracle test's points, probe
// programs cut from "canvas", CUDA graphs forced): the self-conditioning output, every layer's
// output and router top-k (ids exact), the final norm. Tolerances ten times the CPU's; the
// logits' gate is 2e-3.
TEST(DiffusionGemmaGpu, F32EveryLayerMatchesTransformers) {
  IL_REQUIRE_GPU();
  ScopedEnv graphs("IL_CUDA_GRAPHS", "always");
  ProbedDiffusionGemma p = diffusion_gemma_with_layer_probes();
  std::unique_ptr<plan::Executor> exec = cuda::make_executor(p.m.plan, 64, 0, "f32");
  check_diffusion_gemma_layers(p, *exec, LayerTolerances{1e-3, 3e-4, 1e-4, 1e-3}, "cuda f32");
}

// A seeded generation (three requests denoised together, three blocks each, so committed
// canvases are encoded between forwards) gives the CPU engine's tokens in f32. One denoising
// step per block: self-conditioning multiplies a rounding difference about 60-fold per step on
// this random model (tests/oracle/diffusion_gemma_generate_test.cc), so longer chains are
// compared with transformers through recorded draws on the CPU, not across backends.
TEST(DiffusionGemmaGpu, F32GenerationMatchesTheCpu) {
  IL_REQUIRE_GPU();
  std::vector<GenerationRequest> rs(3);
  rs[0].input_ids = expected().at("forward_cases")[0].at("prompt_ids").get<std::vector<int32_t>>();
  rs[1].input_ids = {5, 9, 14};
  rs[2].input_ids = {100, 3, 77, 12, 8, 41};
  for (std::size_t i = 0; i < rs.size(); ++i) {
    rs[i].options.seed = 11 + i;
    rs[i].diffusion.max_new_tokens = 20;
    rs[i].diffusion.max_denoising_steps = 1;
  }
  const auto cpu = load("cpu", "f32")->generate(rs);
  const auto gpu = load("cuda:0", "f32")->generate(rs);
  for (std::size_t i = 0; i < rs.size(); ++i) EXPECT_EQ(gpu[i].tokens, cpu[i].tokens) << "request " << i;
}

}  // namespace
}  // namespace il::test
