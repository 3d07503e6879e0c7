// SigLIP's vision tower on the CPU against transformers 5.17 (tools/oracle/make_siglip_fixtures.py):
// the MAP head's embedding (SiglipVisionTransformer's pooler_output) and the post-layernorm hidden
// states of four random pixel_values images, for the joint SiglipModel folder and the vision tower
// saved alone; each image alone, all four in one batch, and split by a small batch budget; what
// the engine says the folders are, and the input checks.
// Tolerance: 2e-5 absolute on values up to ~4.2: f32 sums in another order than torch's over
// 2 layers of width 32 (seen: 1.4e-6 pooled, 2.8e-6 hidden); batch composition must not change a
// row beyond the same rounding (1e-6).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "fixture.h"
#include "inferencelayer/engine.h"
#include "models/registry.h"

namespace il::test {
namespace {

constexpr double kTol = 2e-5;
constexpr double kBatchTol = 1e-6;

struct ImageCase {
  ImageInput image;
  std::vector<float> pooled;
  Matrix hidden;
};

nlohmann::json expected(const std::string& name) {
  std::ifstream in(fixtures_root() / name / "expected.json");
  return nlohmann::json::parse(in);
}

std::vector<ImageCase> image_cases(const std::string& name) {
  std::vector<ImageCase> out;
  const nlohmann::json e = expected(name);  // kept: a loop over a temporary's member would dangle
  for (const auto& c : e.at("image_cases")) {
    ImageCase ic;
    const auto& pv = c.at("pixel_values");
    ic.image.channels = pv.size();
    ic.image.height = pv.at(0).size();
    ic.image.width = pv.at(0).at(0).size();
    for (const auto& ch : pv)
      for (const auto& row : ch)
        for (const auto& v : row) ic.image.pixels.push_back(v.get<float>());
    ic.pooled = c.at("pooled").get<std::vector<float>>();
    const auto& h = c.at("hidden");
    ic.hidden = Matrix(h.size(), h.at(0).size());
    for (std::size_t r = 0; r < h.size(); ++r)
      for (std::size_t k = 0; k < h[r].size(); ++k) ic.hidden.row(r)[k] = h[r][k].get<float>();
    out.push_back(std::move(ic));
  }
  return out;
}

double max_abs(const float* a, const float* b, std::size_t n) {
  double m = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
    m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  return m;
}

std::vector<ImageInput> images_of(const std::vector<ImageCase>& cases) {
  std::vector<ImageInput> out;
  for (const ImageCase& c : cases) out.push_back(c.image);
  return out;
}

class SiglipFolders : public ::testing::TestWithParam<std::string> {};

TEST_P(SiglipFolders, ImageEmbeddingsAndHiddenStatesMatchTransformers) {
  const std::vector<ImageCase> cases = image_cases(GetParam());
  ASSERT_EQ(cases.size(), 4u);
  auto engine = Engine::load(fixtures_root() / GetParam(), {});
  const std::vector<ImageInput> images = images_of(cases);
  const Matrix pooled = engine->embed_images(images, {});
  const std::vector<Matrix> hidden = engine->image_hidden_states(images);
  ASSERT_EQ(pooled.rows, 4u);
  ASSERT_EQ(hidden.size(), 4u);
  double worst_p = 0, worst_h = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    ASSERT_EQ(pooled.cols, cases[i].pooled.size());
    worst_p = std::max(worst_p, max_abs(pooled.row(i), cases[i].pooled.data(), pooled.cols));
    ASSERT_EQ(hidden[i].rows, cases[i].hidden.rows);
    ASSERT_EQ(hidden[i].cols, cases[i].hidden.cols);
    worst_h = std::max(worst_h, max_abs(hidden[i].data.data(), cases[i].hidden.data.data(), hidden[i].data.size()));
  }
  EXPECT_LE(worst_p, kTol);
  EXPECT_LE(worst_h, kTol);
  std::printf("[siglip] %s: image embedding worst max-abs %.3g, hidden %.3g vs transformers\n", GetParam().c_str(),
              worst_p, worst_h);
}

TEST_P(SiglipFolders, AnImageGivesTheSameRowsAloneInABatchOrSplit) {
  const std::vector<ImageCase> cases = image_cases(GetParam());
  const std::vector<ImageInput> images = images_of(cases);
  auto together = Engine::load(fixtures_root() / GetParam(), {});
  const Matrix all = together->embed_images(images, {});
  const std::vector<Matrix> all_h = together->image_hidden_states(images);
  // 16 patches an image: a budget of 16 runs them one by one, 40 two by two.
  for (std::size_t budget : {std::size_t{16}, std::size_t{40}}) {
    EngineOptions o;
    o.max_batch_tokens = budget;
    auto split = Engine::load(fixtures_root() / GetParam(), o);
    const Matrix m = split->embed_images(images, {});
    const std::vector<Matrix> h = split->image_hidden_states(images);
    for (std::size_t i = 0; i < images.size(); ++i) {
      EXPECT_LE(max_abs(m.row(i), all.row(i), m.cols), kBatchTol) << "budget " << budget << ", image " << i;
      EXPECT_LE(max_abs(h[i].data.data(), all_h[i].data.data(), h[i].data.size()), kBatchTol) << "budget " << budget;
    }
  }
  for (std::size_t i = 0; i < images.size(); ++i) {
    const Matrix alone = together->embed_images({images[i]}, {});
    EXPECT_LE(max_abs(alone.row(0), all.row(i), alone.cols), kBatchTol) << "image " << i << " alone";
  }
}

TEST_P(SiglipFolders, NormalisesOnlyWhenAsked) {
  const std::vector<ImageCase> cases = image_cases(GetParam());
  auto engine = Engine::load(fixtures_root() / GetParam(), {});
  const Matrix raw = engine->embed_images({cases[0].image}, {});
  EmbedOptions o;
  o.normalize = true;
  const Matrix unit = engine->embed_images({cases[0].image}, o);
  double sq = 0.0, raw_sq = 0.0;
  for (std::size_t k = 0; k < unit.cols; ++k) {
    sq += static_cast<double>(unit.row(0)[k]) * unit.row(0)[k];
    raw_sq += static_cast<double>(raw.row(0)[k]) * raw.row(0)[k];
  }
  EXPECT_NEAR(sq, 1.0, 1e-6);
  EXPECT_GT(std::abs(raw_sq - 1.0), 0.1) << "the default is transformers' raw features, not unit vectors";
}

TEST_P(SiglipFolders, RefusesImagesOfAnotherShapeOrWithNonFiniteValues) {
  const std::vector<ImageCase> cases = image_cases(GetParam());
  auto engine = Engine::load(fixtures_root() / GetParam(), {});
  ImageInput wrong = cases[0].image;
  wrong.height = 16;
  wrong.pixels.resize(3 * 16 * 32);
  EXPECT_THROW(engine->embed_images({wrong}, {}), Error);
  ImageInput nan = cases[0].image;
  nan.pixels[100] = NAN;
  try {
    engine->image_hidden_states({cases[1].image, nan});
    FAIL() << "a NaN pixel was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("image 1"), std::string::npos) << e.what();
  }
  if (GetParam() == "siglip-vision") {
    EXPECT_THROW(engine->embed({TokenInput{{1, 2}, {}}}, {}), Error) << "the vision tower alone takes no text";
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SiglipFolders, ::testing::Values("siglip-joint", "siglip-vision"),
                         [](const auto& info) { return fixture_test_name(info.param); });

TEST(Siglip, DescribesItself) {
  auto joint = Engine::load(fixtures_root() / "siglip-joint", {});
  const ModelInfo& i = joint->info();
  EXPECT_EQ(i.model_type, "siglip");
  EXPECT_EQ(i.architecture, "SiglipModel");
  EXPECT_TRUE(i.capabilities.image_input);
  EXPECT_EQ(i.image_channels, 3);
  EXPECT_EQ(i.image_height, 32);
  EXPECT_EQ(i.image_width, 32);
  EXPECT_EQ(i.patch_size, 8);
  EXPECT_EQ(i.image_embedding_dim, 32);
  const nlohmann::json e = expected("siglip-joint");
  EXPECT_TRUE(i.has_logit);
  EXPECT_FLOAT_EQ(i.logit_scale, e.at("logit_scale").get<float>());
  EXPECT_FLOAT_EQ(i.logit_bias, e.at("logit_bias").get<float>());
  auto vision = Engine::load(fixtures_root() / "siglip-vision", {});
  EXPECT_EQ(vision->info().model_type, "siglip_vision_model");
  EXPECT_TRUE(vision->info().capabilities.image_input);
  EXPECT_FALSE(vision->info().has_logit) << "the vision tower alone has no logit scale or bias";
}

// The text tower (SiglipTextTransformer: pooled = head(final_layer_norm(x)[-1])) on token ids
// padded to max_length with the pad id and no attention mask, as SiglipProcessor gives them, and
// the pair logits exp(logit_scale) · cos(image, text) + logit_bias against SiglipModel's
// logits_per_image. Tolerance: kTol on the text embeddings; 1e-4 on logits of magnitude ~8 (the
// cosine's error scaled by exp(logit_scale) ≈ 12).
TEST(Siglip, TextEmbeddingsAndPairLogitsMatchTransformers) {
  const nlohmann::json e = expected("siglip-joint");
  auto engine = Engine::load(fixtures_root() / "siglip-joint", {});
  std::vector<TokenInput> texts;
  for (const auto& c : e.at("text_cases")) texts.push_back({c.at("input_ids").get<std::vector<int32_t>>(), {}});
  ASSERT_EQ(texts.size(), 4u);
  const Matrix t = engine->embed(texts, {});
  double worst = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const auto want = e.at("text_cases")[i].at("pooled").get<std::vector<float>>();
    ASSERT_EQ(t.cols, want.size());
    worst = std::max(worst, max_abs(t.row(i), want.data(), t.cols));
  }
  EXPECT_LE(worst, kTol);
  // Texts one at a time give the same rows.
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const Matrix alone = engine->embed({texts[i]}, {});
    EXPECT_LE(max_abs(alone.row(0), t.row(i), t.cols), kBatchTol);
  }
  const std::vector<ImageCase> cases = image_cases("siglip-joint");
  EmbedOptions unit;
  unit.normalize = true;
  const Matrix img = engine->embed_images(images_of(cases), unit);
  const Matrix txt = engine->embed(texts, unit);
  const ModelInfo& info = engine->info();
  double worst_logit = 0;
  for (std::size_t i = 0; i < img.rows; ++i)
    for (std::size_t j = 0; j < txt.rows; ++j) {
      double dot = 0;
      for (std::size_t k = 0; k < img.cols; ++k) dot += static_cast<double>(img.row(i)[k]) * txt.row(j)[k];
      const double logit = std::exp(static_cast<double>(info.logit_scale)) * dot + info.logit_bias;
      worst_logit = std::max(worst_logit, std::abs(logit - e.at("logits_per_image")[i][j].get<double>()));
    }
  EXPECT_LE(worst_logit, 1e-4);
  std::printf("[siglip] text embeddings worst max-abs %.3g, pair logits %.3g vs transformers\n", worst, worst_logit);
}

// Texts the engine tokenizes are padded to max_position_embeddings with pad_token_id (what
// SiglipProcessor(padding="max_length") gives the model card's call); a text's embedding is that
// of its padded ids. Random weights over a joint config, with a WordPiece tokenizer of 800 tokens
// from another fixture.
TEST(Siglip, TextsArePaddedToMaxLengthWithThePadId) {
  const nlohmann::json cfg = {
      {"model_type", "siglip"},
      {"text_config", {{"vocab_size", 800}, {"hidden_size", 32}, {"intermediate_size", 40}, {"num_hidden_layers", 1},
                       {"num_attention_heads", 2}, {"max_position_embeddings", 24}, {"pad_token_id", 3}}},
      {"vision_config", {{"hidden_size", 32}, {"intermediate_size", 40}, {"num_hidden_layers", 1},
                         {"num_attention_heads", 2}, {"image_size", 16}, {"patch_size", 8}}}};
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "il_siglip_pad_cfg";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << cfg.dump();
  auto engine = Engine::load_random(dir / "config.json", fixtures_root() / "bert-mean" / "tokenizer.json", {});
  const TokenInput t = engine->tokenize("a short text", true);
  ASSERT_EQ(t.ids.size(), 24u);
  EXPECT_EQ(t.ids.back(), 3);
  std::size_t real = 0;
  while (real < t.ids.size() && t.ids[real] != 3) ++real;
  EXPECT_GT(real, 0u);
  for (std::size_t i = real; i < t.ids.size(); ++i) EXPECT_EQ(t.ids[i], 3) << "position " << i;
  const Matrix by_text = engine->embed({engine->tokenize("a short text", true)}, {});
  TokenInput unpadded = t;
  unpadded.ids.resize(real);
  unpadded.type_ids.clear();
  const Matrix by_unpadded = engine->embed({unpadded}, {});
  EXPECT_GT(max_abs(by_text.row(0), by_unpadded.row(0), by_text.cols), 1e-4)
      << "the pad tokens are attended and the last (pad) row is pooled: padding must change the result";
  std::filesystem::remove_all(dir);
}

// A vision tower without its head (vision_use_head false, as some vision-language models ship
// it): hidden states, and a clear refusal of embeddings.
TEST(Siglip, AVisionTowerWithoutHeadGivesHiddenStatesOnly) {
  const nlohmann::json cfg = {{"model_type", "siglip_vision_model"}, {"hidden_size", 16}, {"intermediate_size", 24},
                              {"num_hidden_layers", 1}, {"num_attention_heads", 2}, {"image_size", 16},
                              {"patch_size", 8}, {"vision_use_head", false}};
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "il_siglip_nohead_cfg";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << cfg.dump();
  auto engine = Engine::load_random(dir / "config.json", "", {});
  EXPECT_EQ(engine->info().image_embedding_dim, 0);
  const ImageInput im{3, 16, 16, std::vector<float>(3 * 16 * 16, 0.5f)};
  EXPECT_EQ(engine->image_hidden_states({im}).at(0).rows, 4u);
  try {
    (void)engine->embed_images({im}, {});
    ADD_FAILURE() << "embedded without a head";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no pooling head"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(Siglip, RefusesSiglip2AndUnsupportedFields) {
  const auto refused = [](nlohmann::json j, const std::string& needle) {
    try {
      (void)models::build_model_random(j, "cfg.json");
      ADD_FAILURE() << "accepted " << j.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("cfg.json"), std::string::npos) << e.what();
    }
  };
  refused({{"model_type", "siglip2"}}, "SigLIP 2");
  refused({{"model_type", "siglip2_vision_model"}}, "SigLIP 2");
  refused({{"model_type", "siglip_vision_model"}, {"hidden_size", 30}, {"num_attention_heads", 4}}, "hidden_size");
  refused({{"model_type", "siglip_vision_model"}, {"hidden_act", "swish2"}}, "swish2");
  refused({{"model_type", "siglip_vision_model"}, {"image_size", 8}, {"patch_size", 16}}, "patch_size");
  refused({{"model_type", "siglip"}, {"architectures", {"SiglipForImageClassification"}}}, "SiglipForImageClassification");
}

TEST(Siglip, RandomSo400mGeometryCutsWholePatches) {
  // so400m-patch14-384: 384 / 14 = 27 patches a side (the last 6 pixels of each row and column are
  // not read, as the stride-14 Conv2d reads them).
  const nlohmann::json cfg = {{"model_type", "siglip_vision_model"}, {"hidden_size", 48}, {"intermediate_size", 64},
                              {"num_hidden_layers", 1}, {"num_attention_heads", 4}, {"image_size", 384},
                              {"patch_size", 14}};
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "il_siglip_so400m_cfg";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << cfg.dump();
  auto engine = Engine::load_random(dir / "config.json", "", {});
  ImageInput im{3, 384, 384, std::vector<float>(3 * 384 * 384, 0.25f)};
  const std::vector<Matrix> h = engine->image_hidden_states({im});
  EXPECT_EQ(h.at(0).rows, 27u * 27u);
  const Matrix e = engine->embed_images({im, im}, {});
  for (std::size_t k = 0; k < e.cols; ++k) {
    ASSERT_TRUE(std::isfinite(e.row(0)[k]));
    EXPECT_EQ(e.row(0)[k], e.row(1)[k]);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace il::test
