// DeepSeek-OCR-2's image processor against transformers 5.17 (tests/fixtures/images/deepseek,
// from tools/oracle/make_deepseek_preprocess_fixtures.py): synthetic pages without tiles, on
// several tile grids, of extreme aspect, just past the tile size; both classes (torchvision and
// Pil): the tile count, the global view's and the tiles' uint8 values (SHA-256 of the de-normalised
// pixel_values, CHW) and sampled normalised values.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "image/deepseek_preprocess.h"
#include "sha256.h"

namespace il::image {
namespace {

std::filesystem::path fixture() {
  return std::filesystem::path(IL_IMAGE_SOURCE_DIR) / "tests" / "fixtures" / "images" / "deepseek" / "expected.json";
}

RgbImage page(std::size_t h, std::size_t w) {
  RgbImage im;
  im.width = w;
  im.height = h;
  im.pixels.resize(h * w * 3);
  for (std::size_t y = 0; y < h; ++y)
    for (std::size_t x = 0; x < w; ++x)
      for (std::size_t c = 0; c < 3; ++c)
        im.pixels[(y * w + x) * 3 + c] = static_cast<std::uint8_t>((7 * x + 13 * y + 50 * c + (x * y) % 17) % 256);
  return im;
}

// Views as the fixture hashes them: CHW bytes, one view after another.
std::vector<std::uint8_t> chw_bytes(const std::vector<const RgbImage*>& views) {
  std::vector<std::uint8_t> out;
  for (const RgbImage* v : views) {
    const std::size_t n = v->width * v->height;
    for (std::size_t c = 0; c < 3; ++c)
      for (std::size_t i = 0; i < n; ++i) out.push_back(v->pixels[i * 3 + c]);
  }
  return out;
}

void check_samples(const std::vector<float>& got, const nlohmann::json& samples, const std::string& what) {
  for (const auto& s : samples) {
    const std::size_t p = s[0].get<std::size_t>();
    ASSERT_LT(p, got.size()) << what;
    EXPECT_NEAR(got[p], s[1].get<double>(), 1e-6) << what << " value " << p;
  }
}

TEST(DeepseekPreprocess, MatchesTransformers) {
  std::ifstream f(fixture());
  ASSERT_TRUE(f) << fixture();
  const nlohmann::json j = nlohmann::json::parse(f);
  std::size_t checked = 0;
  for (const auto& c : j.at("cases")) {
    const std::size_t h = c.at("height"), w = c.at("width");
    for (const char* backend : {"torchvision", "pil"}) {
      if (!c.contains(backend)) continue;
      const nlohmann::json& want = c.at(backend);
      const std::string what = std::string(backend) + " " + std::to_string(w) + "x" + std::to_string(h);
      DeepseekProcessorConfig cfg;
      cfg.torchvision = std::string(backend) == "torchvision";
      const DeepseekViews v = deepseek_views(page(h, w), cfg);
      EXPECT_EQ(v.tiles.size(), want.at("num_local_patches")[0].get<std::size_t>()) << what;
      EXPECT_EQ(test::sha256_hex(chw_bytes({&v.global})), want.at("global_view").at("sha256_uint8")) << what;
      check_samples(deepseek_normalise(v.global), want.at("global_view").at("samples"), what + " global");
      if (want.contains("tiles")) {
        std::vector<const RgbImage*> tiles;
        std::vector<float> all;
        for (const RgbImage& t : v.tiles) {
          tiles.push_back(&t);
          const std::vector<float> n = deepseek_normalise(t);
          all.insert(all.end(), n.begin(), n.end());
        }
        EXPECT_EQ(test::sha256_hex(chw_bytes(tiles)), want.at("tiles").at("sha256_uint8")) << what;
        check_samples(all, want.at("tiles").at("samples"), what + " tiles");
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 16u);
}

// The tie the grid choice breaks by area: a 1250 × 1000 page is 0.25 from both 2 × 2 and 3 × 2;
// 3 × 2 replaces 2 × 2 only when the page covers more than half of its tiles.
TEST(DeepseekPreprocess, TileGridTieKeepsTheSmallerGridForASmallPage) {
  DeepseekProcessorConfig c;
  EXPECT_EQ(deepseek_tile_grid(1250, 1000, c), (std::array<std::size_t, 2>{2, 2}));
  EXPECT_EQ(deepseek_tile_grid(2500, 2000, c), (std::array<std::size_t, 2>{3, 2}));
}

// DeepSeek-OCR v1's modes (its reference `infer`: base_size, image_size, crop_mode), at the real
// model's scale and at a tiny model's.
TEST(DeepseekV1Modes, SizesCropAndStretchPerMode) {
  const DeepseekProcessorConfig g = deepseek_v1_mode("");
  EXPECT_EQ(g.size, 1024u);
  EXPECT_EQ(g.tile_size, 640u);
  EXPECT_TRUE(g.crop);
  EXPECT_FALSE(g.stretch);
  EXPECT_FALSE(g.torchvision);
  EXPECT_EQ(g.min_tiles, 2u);
  EXPECT_EQ(g.max_tiles, 6u);
  const struct {
    const char* mode;
    std::size_t size;
    bool stretch;
  } one_view[] = {{"tiny", 512, true}, {"small", 640, true}, {"base", 1024, false}, {"large", 1280, false}};
  for (const auto& m : one_view) {
    const DeepseekProcessorConfig c = deepseek_v1_mode(m.mode);
    EXPECT_EQ(c.size, m.size) << m.mode;
    EXPECT_FALSE(c.crop) << m.mode;
    EXPECT_EQ(c.stretch, m.stretch) << m.mode;
  }
  EXPECT_EQ(deepseek_v1_mode("gundam", 64).tile_size, 40u);
  EXPECT_EQ(deepseek_v1_mode("large", 64).size, 80u);
  EXPECT_THROW(deepseek_v1_mode("huge"), Error);
}

RgbImage solid(std::size_t w, std::size_t h, std::uint8_t v) {
  RgbImage im;
  im.width = w;
  im.height = h;
  im.pixels.assign(w * h * 3, v);
  return im;
}

TEST(DeepseekV1Modes, ViewsPerMode) {
  // A page larger than a tile: Gundam tiles it (1.5 → 3 × 2); the one-view modes do not.
  const RgbImage page = solid(1500, 1000, 200);
  DeepseekViews v = deepseek_views(page, deepseek_v1_mode("gundam"));
  EXPECT_EQ(v.columns, 3u);
  EXPECT_EQ(v.rows, 2u);
  EXPECT_EQ(v.tiles.size(), 6u);
  EXPECT_EQ(v.global.width, 1024u);
  v = deepseek_views(page, deepseek_v1_mode("base"));
  EXPECT_TRUE(v.tiles.empty());
  EXPECT_EQ(v.global.width, 1024u);
  // Tiny stretches: no background band, the whole view is the page's colour.
  v = deepseek_views(page, deepseek_v1_mode("tiny"));
  EXPECT_EQ(v.global.width, 512u);
  EXPECT_EQ(v.global.height, 512u);
  EXPECT_EQ(*v.global.at(0, 0), 200);
  // Gundam pads: a band of background above and below the 1.5:1 page.
  v = deepseek_views(page, deepseek_v1_mode("gundam"));
  EXPECT_EQ(*v.global.at(0, 0), 127);
  EXPECT_EQ(*v.global.at(512, 512), 200);
  // A page within a tile is not tiled in Gundam mode.
  EXPECT_TRUE(deepseek_views(solid(640, 300, 9), deepseek_v1_mode("gundam")).tiles.empty());
}

// v1's views against its reference steps run through Pillow (tests/fixtures/images/deepseek-v1,
// tools/oracle/make_deepseek_v1_preprocess_fixture.py): every mode on eight synthetic pages (within
// a tile, on several grids, extreme aspects): the tile grid, and the uint8 values of the global
// view and the tiles (SHA-256, CHW), i.e. Pillow's resize filter and ImageOps.pad's rounding.
TEST(DeepseekV1Modes, ViewsMatchPillow) {
  const auto path = std::filesystem::path(IL_IMAGE_SOURCE_DIR) / "tests" / "fixtures" / "images" / "deepseek-v1" /
                    "expected.json";
  std::ifstream f(path);
  ASSERT_TRUE(f) << path;
  const nlohmann::json j = nlohmann::json::parse(f);
  std::size_t checked = 0;
  for (const auto& c : j.at("cases")) {
    const std::size_t h = c.at("height"), w = c.at("width");
    const RgbImage im = page(h, w);
    for (const auto& [mode, want] : c.at("modes").items()) {
      const std::string what = mode + " " + std::to_string(w) + "x" + std::to_string(h);
      const DeepseekViews v = deepseek_views(im, deepseek_v1_mode(mode));
      ASSERT_EQ(v.tiles.size(), want.at("tiles").get<std::size_t>()) << what;
      if (!v.tiles.empty()) {
        EXPECT_EQ(v.columns, want.at("grid")[0].get<std::size_t>()) << what;
        EXPECT_EQ(v.rows, want.at("grid")[1].get<std::size_t>()) << what;
        std::vector<const RgbImage*> tiles;
        for (const RgbImage& t : v.tiles) tiles.push_back(&t);
        EXPECT_EQ(test::sha256_hex(chw_bytes(tiles)), want.at("tiles_sha256")) << what;
      }
      EXPECT_EQ(v.global.width, want.at("global_side").get<std::size_t>()) << what;
      EXPECT_EQ(v.global.height, want.at("global_side").get<std::size_t>()) << what;
      EXPECT_EQ(test::sha256_hex(chw_bytes({&v.global})), want.at("global_sha256")) << what;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 40u);
}

// ImageOps.pad: the fit is round(997 / 1000 · 1024) = 1021 rows, placed at round(3 / 2) = 2 (half
// to even), where the OCR-2 processor's pad_to_square puts it at ⌊3 / 2⌋ = 1.
TEST(DeepseekV1Modes, PadRoundsTheOffsetAsPillow) {
  const RgbImage page = solid(1000, 997, 200);
  const DeepseekViews v1 = deepseek_views(page, deepseek_v1_mode("base"));
  ASSERT_EQ(v1.global.height, 1024u);
  EXPECT_EQ(*v1.global.at(500, 1), 127);
  EXPECT_EQ(*v1.global.at(500, 2), 200);
  EXPECT_EQ(*v1.global.at(500, 1022), 200);
  EXPECT_EQ(*v1.global.at(500, 1023), 127);
  DeepseekProcessorConfig c2;
  c2.size = 1024;
  c2.tile_size = 1024;
  c2.torchvision = false;
  const DeepseekViews v2 = deepseek_views(page, c2);
  EXPECT_EQ(*v2.global.at(500, 1), 200);
}

}  // namespace
}  // namespace il::image
