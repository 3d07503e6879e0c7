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

}  // namespace
}  // namespace il::image
