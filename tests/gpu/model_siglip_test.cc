// SigLIP's vision tower (tests/fixtures/siglip-joint, siglip-vision) on CUDA through the Engine,
// against the committed transformers outputs and the CPU engine: patch rows uploaded with the
// batch and embedded (plan::PatchEmbedStep: row upload, GEMM, position rows), the pre-norm
// encoder, post_layernorm, and the MAP head (plan::ProbeAttentionStep over each image's patches,
// then out_proj and the residual MLP on one row per image).
// - f32: image embeddings and hidden states within 1e-4 of transformers (the CPU is within 3e-6;
//   the GPU's GEMMs and attention sum in other orders), and of the CPU engine.
// - f16 / bf16: cosine ≥ 0.999 of every embedding and every hidden row to transformers' f32.
// - Batches: 4 images in one batch, one by one (max_batch_tokens 16) and two by two (40, which
//   pads the launched shape to a bucket) give the same rows (f32 within 1e-5).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "fixture.h"
#include "gpu_test_util.h"
#include "inferencelayer/engine.h"

namespace il::test {
namespace {

constexpr double kTolerance = 1e-4;
constexpr double kBatchTolerance = 1e-5;
constexpr double kMinCosine = 0.999;

EngineOptions options(const std::string& dtype, std::size_t budget = 16384) {
  EngineOptions o;
  o.device = "cuda:0";
  o.dtype = dtype;
  o.max_batch_tokens = budget;
  return o;
}

double cosine(const float* a, const float* b, std::size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return -INFINITY;
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  if (aa == 0 && bb == 0) return 1.0;
  return ab / std::sqrt(aa * bb);
}

struct Expected {
  std::vector<ImageInput> images;
  std::vector<std::vector<float>> pooled;
  std::vector<std::vector<float>> hidden;  // rows back to back
};

Expected read_expected(const std::string& name) {
  std::ifstream in(fixtures_root() / name / "expected.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  Expected e;
  for (const auto& c : j.at("image_cases")) {
    const auto& pv = c.at("pixel_values");
    ImageInput im{pv.size(), pv.at(0).size(), pv.at(0).at(0).size(), {}};
    for (const auto& ch : pv)
      for (const auto& row : ch)
        for (const auto& v : row) im.pixels.push_back(v.get<float>());
    e.images.push_back(std::move(im));
    e.pooled.push_back(c.at("pooled").get<std::vector<float>>());
    std::vector<float> h;
    for (const auto& row : c.at("hidden"))
      for (const auto& v : row) h.push_back(v.get<float>());
    e.hidden.push_back(std::move(h));
  }
  return e;
}

struct Param {
  std::string folder, dtype;
};

class GpuSiglipTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override { IL_REQUIRE_GPU(); }
  bool close(const float* got, const float* want, std::size_t n, double tol, double& worst) const {
    if (GetParam().dtype == "f32") {
      const double e = max_abs_finite(got, want, n);
      worst = std::max(worst, e);
      return e <= tol;
    }
    const double c = cosine(got, want, n);
    worst = std::max(worst, 1.0 - c);
    return c >= kMinCosine;
  }
};

TEST_P(GpuSiglipTest, ImageEmbeddingsAndHiddenStatesMatchTransformers) {
  const Expected e = read_expected(GetParam().folder);
  auto engine = Engine::load(fixtures_root() / GetParam().folder, options(GetParam().dtype));
  ASSERT_NE(engine->info().backend, "cpu");
  const Matrix pooled = engine->embed_images(e.images, {});
  const std::vector<Matrix> hidden = engine->image_hidden_states(e.images);
  double worst_p = 0, worst_h = 0;
  for (std::size_t i = 0; i < e.images.size(); ++i) {
    ASSERT_EQ(pooled.cols, e.pooled[i].size());
    EXPECT_TRUE(close(pooled.row(i), e.pooled[i].data(), pooled.cols, kTolerance, worst_p)) << "image " << i;
    ASSERT_EQ(hidden[i].data.size(), e.hidden[i].size());
    const std::size_t h = hidden[i].cols;
    for (std::size_t r = 0; r < hidden[i].rows; ++r)
      EXPECT_TRUE(close(hidden[i].row(r), e.hidden[i].data() + r * h, h, kTolerance, worst_h))
          << "image " << i << " row " << r;
  }
  std::printf("[siglip gpu] %s %s: embedding worst %s %.3g, hidden %.3g\n", GetParam().folder.c_str(),
              GetParam().dtype.c_str(), GetParam().dtype == "f32" ? "max-abs" : "1 - cosine", worst_p, worst_h);
}

TEST_P(GpuSiglipTest, BatchCompositionDoesNotChangeAnImage) {
  const Expected e = read_expected(GetParam().folder);
  auto together = Engine::load(fixtures_root() / GetParam().folder, options(GetParam().dtype));
  const Matrix all = together->embed_images(e.images, {});
  for (std::size_t budget : {std::size_t{16}, std::size_t{40}}) {
    auto split = Engine::load(fixtures_root() / GetParam().folder, options(GetParam().dtype, budget));
    // Twice: the second run of a shape may replay a CUDA graph, which must read the new patches.
    for (int pass = 0; pass < 2; ++pass) {
      const Matrix m = split->embed_images(e.images, {});
      for (std::size_t i = 0; i < e.images.size(); ++i) {
        double worst = 0;
        EXPECT_TRUE(close(m.row(i), all.row(i), m.cols, kBatchTolerance, worst))
            << "budget " << budget << " pass " << pass << " image " << i;
      }
    }
  }
}

// The joint folder's text tower on token ids padded as SiglipProcessor pads them.
TEST_P(GpuSiglipTest, TextEmbeddingsMatchTransformers) {
  if (GetParam().folder != "siglip-joint") GTEST_SKIP() << "the vision tower alone has no text tower";
  std::ifstream in(fixtures_root() / "siglip-joint" / "expected.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  auto engine = Engine::load(fixtures_root() / "siglip-joint", options(GetParam().dtype));
  std::vector<TokenInput> texts;
  for (const auto& c : j.at("text_cases")) texts.push_back({c.at("input_ids").get<std::vector<int32_t>>(), {}});
  const Matrix t = engine->embed(texts, {});
  double worst = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const auto want = j.at("text_cases")[i].at("pooled").get<std::vector<float>>();
    ASSERT_EQ(t.cols, want.size());
    EXPECT_TRUE(close(t.row(i), want.data(), t.cols, kTolerance, worst)) << "text " << i;
  }
  std::printf("[siglip gpu] text %s: worst %.3g\n", GetParam().dtype.c_str(), worst);
}

TEST_P(GpuSiglipTest, MatchesTheCpuEngine) {
  if (GetParam().dtype != "f32") GTEST_SKIP() << "the CPU computes in f32 only";
  const Expected e = read_expected(GetParam().folder);
  auto gpu = Engine::load(fixtures_root() / GetParam().folder, options("f32"));
  EngineOptions c;
  c.device = "cpu";
  auto cpu = Engine::load(fixtures_root() / GetParam().folder, c);
  const Matrix a = gpu->embed_images(e.images, {}), b = cpu->embed_images(e.images, {});
  double worst = 0;
  for (std::size_t i = 0; i < a.rows; ++i) EXPECT_TRUE(close(a.row(i), b.row(i), a.cols, kTolerance, worst));
}

// Image files through Engine::load_image, whose compact images (uint8 + the processor's byte
// values) go up as bytes and are cut into patch rows on the device: the same embeddings and hidden
// states, bit for bit, as the same images expanded to f32 pixel_values (uploaded as f32 rows),
// in one batch and in bucket-padded batches of two (budget 40), twice each (the second run of a
// shape may replay a CUDA graph, which must read the new bytes and zero the padding rows); f32
// within kTolerance of transformers' embeddings of the files (expected_images.json).
TEST_P(GpuSiglipTest, ImageFilesAsBytesEmbedAsTheirPixelValues) {
  if (GetParam().folder != "siglip-joint") GTEST_SKIP() << "the image files' references are the joint folder's";
  const std::filesystem::path dir = fixtures_root() / "siglip-joint";
  std::ifstream in(dir / "expected_images.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  for (std::size_t budget : {std::size_t{16384}, std::size_t{40}}) {
    auto engine = Engine::load(dir, options(GetParam().dtype, budget));
    std::vector<ImageInput> compact, expanded;
    for (const auto& c : expected.at("images")) {
      const std::string file = c.at("file").get<std::string>();
      std::ifstream f(fixtures_root() / file, std::ios::binary);
      const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
      compact.push_back(engine->load_image(bytes, file));
      ASSERT_TRUE(compact.back().compact()) << file;
      const ImageInput& im = compact.back();
      expanded.push_back(ImageInput{im.channels, im.height, im.width, im.pixel_values()});
    }
    for (int pass = 0; pass < 2; ++pass) {
      const Matrix a = engine->embed_images(compact, {}), b = engine->embed_images(expanded, {});
      ASSERT_EQ(a.data.size(), b.data.size());
      EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)), 0)
          << "budget " << budget << " pass " << pass;
      const std::vector<Matrix> ha = engine->image_hidden_states(compact), hb = engine->image_hidden_states(expanded);
      for (std::size_t i = 0; i < ha.size(); ++i)
        EXPECT_EQ(std::memcmp(ha[i].data.data(), hb[i].data.data(), ha[i].data.size() * sizeof(float)), 0)
            << "hidden, image " << i << " budget " << budget << " pass " << pass;
      double worst = 0;
      for (std::size_t i = 0; i < a.rows; ++i) {
        const auto want = expected["images"][i].at("embedding").get<std::vector<float>>();
        ASSERT_EQ(want.size(), a.cols);
        EXPECT_TRUE(close(a.row(i), want.data(), a.cols, kTolerance, worst)) << "image " << i;
      }
      if (pass == 0)
        std::printf("[siglip gpu] files as bytes %s budget %zu: embedding worst %.3g vs transformers\n",
                    GetParam().dtype.c_str(), budget, worst);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Folders, GpuSiglipTest,
                         ::testing::Values(Param{"siglip-joint", "f32"}, Param{"siglip-joint", "f16"},
                                           Param{"siglip-joint", "bf16"}, Param{"siglip-vision", "f32"},
                                           Param{"siglip-vision", "bf16"}),
                         [](const auto& info) {
                           std::string n = info.param.folder + "_" + info.param.dtype;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace il::test
