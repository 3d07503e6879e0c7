// GLM-V (GLM-OCR) preprocessing against transformers 5.17's Glm46VImageProcessor (torchvision,
// the default) and Glm46VImageProcessorPil, on our committed test PNGs and on synthetic images
// computed here and in the generator by the same formulas (tiny images below the 28-px factor, a
// portrait page inside the default budget, an A4 page at 300 dpi above it, images the processor
// refuses for their aspect ratio), for GLM-OCR's config and a small pixel budget that scales
// most images up or down. Fixture: tests/fixtures/images/glm/preprocess_expected.json from
// tools/oracle/make_glm_preprocess_fixtures.py: per case the grid, the SHA-256 of the float32 rows, the
// SHA-256 of the rows without rescale/normalise (the resized uint8 values) and 48 sampled values.
//
// Tolerance: none. smart_resize is integer and double arithmetic we repeat operation by
// operation; the resize, rescale and normalise are the SigLIP/CLIP paths already bit-exact
// (preprocess_test.cc); patchify only moves values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <span>

#include "core/error.h"
#include "fixture_util.h"
#include "image/glm_preprocess.h"
#include "png_test_reader.h"
#include "sha256.h"

namespace il::image {
namespace {

std::filesystem::path glm_fixture_dir() { return test::fixture_dir().parent_path() / "glm"; }

nlohmann::json read_glm_fixture(const std::string& name) {
  std::ifstream in(glm_fixture_dir() / name);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

std::uint32_t hash32(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  std::uint32_t h = (a * 73856093u) ^ (b * 19349663u) ^ (c * 83492791u);
  return h * 2654435761u;
}

// The generator's synthetic(): bands of a horizontal gradient among hashed noise.
RgbImage synthetic(std::size_t width, std::size_t height) {
  RgbImage img{width, height, std::vector<std::uint8_t>(width * height * 3)};
  for (std::size_t y = 0; y < height; ++y) {
    for (std::size_t x = 0; x < width; ++x) {
      for (std::uint32_t c = 0; c < 3; ++c) {
        std::uint32_t v;
        if ((x / 3 + y / 2) % 3 == 0) {
          v = static_cast<std::uint32_t>((x * 255 / std::max<std::size_t>(width - 1, 1) + c * 40) % 256);
        } else {
          v = (hash32(static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(y), c) >> 24) & 0xFF;
        }
        img.pixels[(y * width + x) * 3 + c] = static_cast<std::uint8_t>(v);
      }
    }
  }
  return img;
}

// The generator's page(): lines of 4-px "glyph" blocks of dark ink on near-white paper.
RgbImage page(std::size_t width, std::size_t height) {
  RgbImage img{width, height, std::vector<std::uint8_t>(width * height * 3)};
  for (std::size_t y = 0; y < height; ++y) {
    const std::size_t line = y / 16;
    for (std::size_t x = 0; x < width; ++x) {
      const bool in_text = (y % 16) < 10 && (line % 5) != 4 && x >= 24 && x + 24 < width;
      const bool word =
          ((hash32(static_cast<std::uint32_t>(x / 4), static_cast<std::uint32_t>(line), 7) >> 20) & 7) < 5;
      const bool ink = in_text && word && ((x + y) % 3) != 0;
      for (std::size_t c = 0; c < 3; ++c) {
        img.pixels[(y * width + x) * 3 + c] = static_cast<std::uint8_t>(ink ? 20 + 10 * c : 250 - 3 * c);
      }
    }
  }
  return img;
}

std::string sha_of(const std::vector<float>& v) {
  return test::sha256_hex(std::span(reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * sizeof(float)));
}

std::map<std::string, RgbImage> load_images(const nlohmann::json& expected) {
  std::map<std::string, RgbImage> images;
  for (const auto& s : expected["synthetic"]) {
    const std::string name = s[0], kind = s[1];
    const std::size_t w = s[2], h = s[3];
    images[name] = kind == "page" ? page(w, h) : synthetic(w, h);
  }
  return images;
}

TEST(GlmPreprocess, SyntheticImagesEqualTheGenerators) {
  const auto expected = read_glm_fixture("preprocess_expected.json");
  const auto images = load_images(expected);
  ASSERT_EQ(images.size(), expected["info"]["synthetic_sha256"].size());
  for (const auto& [name, img] : images) {
    EXPECT_EQ(test::sha256_hex(img.pixels), expected["info"]["synthetic_sha256"][name].get<std::string>()) << name;
  }
}

TEST(GlmPreprocess, MatchesTransformersProcessorsExactly) {
  const auto expected = read_glm_fixture("preprocess_expected.json");
  ASSERT_EQ(expected["info"]["transformers"], "5.17.0");
  auto images = load_images(expected);
  int checked = 0, refused = 0;
  for (const auto& c : expected["cases"]) {
    const std::string name = c["image"], config_name = c["config"], backend = c["backend"];
    if (!images.count(name)) images[name] = test::read_png_rgb(test::fixture_dir() / (name + ".png"));
    GlmImageConfig config = parse_glm_image_config(expected["configs"][config_name], config_name);
    config.backend = backend == "pil" ? ProcessorBackend::pil : ProcessorBackend::torchvision;
    const std::string what = config_name + " / " + backend + " (" + c["class"].get<std::string>() + ") / " + name;
    const RgbImage& img = images.at(name);
    ASSERT_EQ(img.width, c["width"].get<std::size_t>()) << what;
    ASSERT_EQ(img.height, c["height"].get<std::size_t>()) << what;

    if (c.contains("error")) {
      // transformers: "absolute aspect ratio must be smaller than 200"
      try {
        glm_preprocess(img, config);
        ADD_FAILURE() << what << ": expected a refusal like transformers' " << c["error"];
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("aspect ratio"), std::string::npos) << what << ": " << e.what();
      }
      ++refused;
      continue;
    }
    const PatchedImage out = glm_preprocess(img, config);
    const std::array<int, 3> grid{c["grid_thw"][0].get<int>(), c["grid_thw"][1].get<int>(),
                                  c["grid_thw"][2].get<int>()};
    ASSERT_EQ(out.grid_thw, grid) << what;
    ASSERT_EQ(out.patch_dim, c["shape"][1].get<std::size_t>()) << what;
    ASSERT_EQ(out.num_patches(), c["shape"][0].get<std::size_t>()) << what;
    double worst = 0.0;
    for (const auto& s : c["samples"]) {
      const std::size_t pos = s[0];
      worst = std::max(worst, std::abs(static_cast<double>(out.rows.at(pos)) - s[1].get<double>()));
    }
    EXPECT_EQ(worst, 0.0) << what << ": sampled values differ by up to " << worst;
    EXPECT_EQ(sha_of(out.rows), c["float_sha256"].get<std::string>()) << what;

    GlmImageConfig raw = config;
    raw.do_rescale = raw.do_normalize = false;
    EXPECT_EQ(sha_of(glm_preprocess(img, raw).rows), c["raw_sha256"].get<std::string>()) << what << " (resize)";
    ++checked;
  }
  EXPECT_EQ(checked, 56);  // 14 images x 2 configs x 2 backends
  EXPECT_EQ(refused, 8);   // 2 images x 2 configs x 2 backends
}

TEST(GlmPreprocess, RowsAreMergeWindowsOfChannelTemporalPatch) {
  // No resize, no normalisation: a 4x2-patch image (patch 2, merge 2) whose value tells where it
  // came from, so the layout is checked independently of the fixture.
  GlmImageConfig c;
  c.processor_type = "Glm46VImageProcessor";
  c.do_resize = false;
  c.do_rescale = c.do_normalize = false;
  c.patch_size = 2;
  c.merge_size = 2;
  c.temporal_patch_size = 2;
  const std::size_t w = 8, h = 4;  // grid 2 x 4 patches
  RgbImage img{w, h, std::vector<std::uint8_t>(w * h * 3)};
  for (std::size_t y = 0; y < h; ++y)
    for (std::size_t x = 0; x < w; ++x)
      for (std::size_t ch = 0; ch < 3; ++ch) {
        img.pixels[(y * w + x) * 3 + ch] = static_cast<std::uint8_t>(ch * 64 + y * 8 + x);
      }
  const PatchedImage out = glm_preprocess(img, c);
  EXPECT_EQ(out.grid_thw, (std::array<int, 3>{1, 2, 4}));
  ASSERT_EQ(out.patch_dim, 3u * 2 * 2 * 2);
  ASSERT_EQ(out.num_patches(), 8u);
  EXPECT_EQ(out.num_merged_tokens(2), 2u);
  std::size_t row = 0;
  for (std::size_t bw = 0; bw < 2; ++bw) {  // one block row (grid_h 2 / merge 2), two block columns
    for (std::size_t mh = 0; mh < 2; ++mh) {
      for (std::size_t mw = 0; mw < 2; ++mw, ++row) {
        std::size_t k = 0;
        for (std::size_t ch = 0; ch < 3; ++ch)
          for (std::size_t t = 0; t < 2; ++t)
            for (std::size_t py = 0; py < 2; ++py)
              for (std::size_t px = 0; px < 2; ++px, ++k) {
                const std::size_t y = mh * 2 + py, x = (bw * 2 + mw) * 2 + px;
                EXPECT_EQ(out.rows[row * out.patch_dim + k], static_cast<float>(ch * 64 + y * 8 + x))
                    << "row " << row << " k " << k;
              }
      }
    }
  }
}

TEST(GlmPreprocess, SmartResizeFollowsTheBudget) {
  GlmImageConfig c;  // class defaults: 12544 .. 11760000
  c.min_pixels = 12544;
  c.max_pixels = 9633792;
  EXPECT_EQ(glm_smart_resize(1400, 1000, c), (std::pair<std::size_t, std::size_t>{1400, 1008}));
  EXPECT_EQ(glm_smart_resize(3508, 2480, c), (std::pair<std::size_t, std::size_t>{2604, 1820}));
  EXPECT_EQ(glm_smart_resize(15, 20, c), (std::pair<std::size_t, std::size_t>{84, 112}));
  EXPECT_THROW(glm_smart_resize(0, 20, c), Error);
  try {
    glm_smart_resize(2, 600, c);
    ADD_FAILURE() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("600x2 image has an aspect ratio of 300"), std::string::npos) << e.what();
  }
}

nlohmann::json glm_json() {
  return nlohmann::json::parse(R"({
    "size": {"shortest_edge": 12544, "longest_edge": 9633792},
    "do_rescale": true, "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2,
    "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
    "image_processor_type": "Glm46VImageProcessor", "processor_class": "Glm46VProcessor"})");
}

std::string error_of(const nlohmann::json& j) {
  try {
    parse_glm_image_config(j, "dir/preprocessor_config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GlmPreprocessConfig, ReadsTheGlmOcrForm) {
  const GlmImageConfig c = parse_glm_image_config(glm_json(), "f.json");
  EXPECT_EQ(c.processor_type, "Glm46VImageProcessor");
  EXPECT_EQ(c.backend, ProcessorBackend::torchvision);
  EXPECT_EQ(c.min_pixels, 12544u);
  EXPECT_EQ(c.max_pixels, 9633792u);
  EXPECT_EQ(c.patch_dim(), 1176u);
  EXPECT_EQ(c.factor(), 28u);
  EXPECT_EQ(c.resample, ResampleFilter::bicubic);
  // Absent size: the class default. Top-level min/max_pixels: stored by transformers but unused.
  auto j = glm_json();
  j.erase("size");
  j["min_pixels"] = 20000;
  j["max_pixels"] = 400000;
  const GlmImageConfig d = parse_glm_image_config(j, "f.json");
  EXPECT_EQ(d.min_pixels, 12544u);
  EXPECT_EQ(d.max_pixels, 11760000u);
  j["image_processor_type"] = "Glm4vImageProcessorFast";
  EXPECT_EQ(parse_glm_image_config(j, "f.json").processor_type, "Glm4vImageProcessor");
  EXPECT_TRUE(is_glm_preprocessor_config(j));
  EXPECT_TRUE(is_glm_preprocessor_config(glm_json()));
  j["image_processor_type"] = "SiglipImageProcessor";
  EXPECT_FALSE(is_glm_preprocessor_config(j));
  EXPECT_FALSE(is_glm_preprocessor_config(nlohmann::json::array()));
}

TEST(GlmPreprocessConfig, ErrorsNameTheFileAndTheField) {
  auto j = glm_json();
  j["size"] = {{"shortest_edge", 12544}};
  EXPECT_NE(error_of(j).find("dir/preprocessor_config.json: size must hold both"), std::string::npos) << error_of(j);
  j = glm_json();
  j["size"] = {{"height", 224}, {"width", 224}};
  EXPECT_NE(error_of(j).find("size.height is not supported"), std::string::npos) << error_of(j);
  j = glm_json();
  j["size"] = {{"shortest_edge", 200000}, {"longest_edge", 100000}};
  EXPECT_NE(error_of(j).find("min_pixels 200000) is above"), std::string::npos) << error_of(j);
  j = glm_json();
  j["size"]["longest_edge"] = 0;
  EXPECT_NE(error_of(j).find("longest_edge must be an integer"), std::string::npos) << error_of(j);
  j = glm_json();
  j["patch_size"] = 0;
  EXPECT_NE(error_of(j).find("patch_size must be an integer"), std::string::npos) << error_of(j);
  j = glm_json();
  j["do_pad"] = true;
  EXPECT_NE(error_of(j).find("field \"do_pad\""), std::string::npos) << error_of(j);
  j = glm_json();
  j["image_processor_type"] = "SiglipImageProcessor";
  EXPECT_NE(error_of(j).find("is not a GLM-V processor"), std::string::npos) << error_of(j);
  j = glm_json();
  j.erase("image_processor_type");
  EXPECT_NE(error_of(j).find("no image_processor_type"), std::string::npos) << error_of(j);
  // The SigLIP/CLIP reader sends a GLM file here instead of calling it unsupported.
  try {
    parse_preprocessor_config(glm_json(), "g.json");
    ADD_FAILURE() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("read_glm_image_config"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_glm_image_config("/nonexistent/preprocessor_config.json"), Error);
}

TEST(GlmPreprocess, RefusesBadImages) {
  const GlmImageConfig c = parse_glm_image_config(glm_json(), "f.json");
  EXPECT_THROW(glm_preprocess(RgbImage{}, c), Error);
  RgbImage wrong{4, 4, std::vector<std::uint8_t>(5)};
  EXPECT_THROW(glm_preprocess(wrong, c), Error);
  GlmImageConfig fixed = c;
  fixed.do_resize = false;
  RgbImage odd{30, 28, std::vector<std::uint8_t>(30 * 28 * 3)};
  EXPECT_THROW(glm_preprocess(odd, fixed), Error);
}

}  // namespace
}  // namespace il::image
