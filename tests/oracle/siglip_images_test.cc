// SigLIP end to end from image files (tests/fixtures/images: JPEG with EXIF rotation and CMYK,
// palette and 16-bit RGBA PNG, lossy WebP, a photo and a page scan of several hundred pixels)
// against transformers 5.17 (tools/oracle/make_siglip_image_fixtures.py: load_image, the
// processor AutoImageProcessor picks for the folder's preprocessor_config.json, and
// get_image_features), through Engine::load_image and embed_images on the siglip-joint folder.
// - pixel_values: bit-exact, compared as the SHA-256 of their little-endian f32 bytes (decoding
//   and preprocessing are both bit-exact with transformers: tests/image);
// - embeddings: 2e-5 absolute, the vision tower's tolerance (siglip_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "fixture.h"
#include "inferencelayer/engine.h"
#include "../image/sha256.h"

namespace il::test {
namespace {

std::vector<std::uint8_t> file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string pixel_sha(const ImageInput& in) {
  const std::vector<float> pixels = in.pixel_values();  // load_image gives the compact form
  std::vector<std::uint8_t> bytes(pixels.size() * 4);
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    std::uint32_t u;
    std::memcpy(&u, &pixels[i], 4);
    for (int b = 0; b < 4; ++b) bytes[4 * i + static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(u >> (8 * b));
  }
  return image::test::sha256_hex(bytes);
}

TEST(SiglipImages, FilesGiveTransformersPixelValuesAndEmbeddings) {
  const std::filesystem::path dir = fixtures_root() / "siglip-joint";
  std::ifstream in(dir / "expected_images.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  auto engine = Engine::load(dir, {});
  std::vector<ImageInput> images;
  for (const auto& c : expected.at("images")) {
    const std::string file = c.at("file").get<std::string>();
    const ImageInput im = engine->load_image(file_bytes(fixtures_root() / file), file);
    ASSERT_EQ(im.channels, 3u);
    ASSERT_EQ(im.height, 32u);
    ASSERT_EQ(im.width, 32u);
    EXPECT_EQ(pixel_sha(im), c.at("pixel_values_sha256").get<std::string>()) << file;
    images.push_back(im);
  }
  const Matrix m = engine->embed_images(images, {});
  double worst = 0;
  for (std::size_t i = 0; i < images.size(); ++i) {
    const auto want = expected["images"][i].at("embedding").get<std::vector<float>>();
    ASSERT_EQ(m.cols, want.size());
    for (std::size_t k = 0; k < want.size(); ++k)
      worst = std::max(worst, std::abs(static_cast<double>(m.row(i)[k]) - want[k]));
  }
  EXPECT_LE(worst, 2e-5);
  std::printf("[siglip images] %zu files: embeddings worst %.3g vs transformers\n", images.size(), worst);

  // load_image's compact form (bytes cut into patch rows by the executor) and the same images
  // expanded to f32 pixel_values (the JSON pixel_values path): the same embeddings, bit for bit.
  std::vector<ImageInput> expanded;
  for (const ImageInput& im : images) {
    ASSERT_TRUE(im.compact());
    ImageInput f{im.channels, im.height, im.width, im.pixel_values()};
    expanded.push_back(f);
  }
  const Matrix e = engine->embed_images(expanded, {});
  ASSERT_EQ(e.data.size(), m.data.size());
  EXPECT_EQ(std::memcmp(e.data.data(), m.data.data(), m.data.size() * sizeof(float)), 0)
      << "compact and f32 images gave different embeddings";
}

TEST(SiglipImages, BadImagesAreErrorsNamingTheInput) {
  auto engine = Engine::load(fixtures_root() / "siglip-joint", {});
  const auto expect_error = [&](const std::vector<std::uint8_t>& bytes, const std::string& part) {
    try {
      (void)engine->load_image(bytes, "upload.bin");
      ADD_FAILURE() << "accepted; wanted an error saying " << part;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("upload.bin"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error({'h', 'e', 'l', 'l', 'o'}, "JPEG");  // not an image: the accepted formats are named
  auto jpeg = file_bytes(fixtures_root() / "images" / "jpeg_420_big.jpg");
  jpeg.resize(jpeg.size() / 2);
  expect_error(jpeg, "");  // truncated
}

TEST(SiglipImages, LimitsComeFromTheEngineOptions) {
  EngineOptions o;
  o.max_image_bytes = 100;
  auto engine = Engine::load(fixtures_root() / "siglip-joint", o);
  const auto bytes = file_bytes(fixtures_root() / "images" / "jpeg_420_big.jpg");
  ASSERT_GT(bytes.size(), 100u);
  EXPECT_THROW((void)engine->load_image(bytes, "big.jpg"), Error);
  o.max_image_bytes = 64u << 20;
  o.max_image_pixels = 100;  // 96 × 64 pixels is more
  auto small = Engine::load(fixtures_root() / "siglip-joint", o);
  EXPECT_THROW((void)small->load_image(bytes, "big.jpg"), Error);
}

TEST(SiglipImages, AFolderWithoutAProcessorRefusesEncodedImagesOnly) {
  // siglip-vision has no preprocessor_config.json: pixel_values work, files are refused saying why.
  auto engine = Engine::load(fixtures_root() / "siglip-vision", {});
  try {
    (void)engine->load_image(file_bytes(fixtures_root() / "images" / "png_p8.png"), "p.png");
    ADD_FAILURE() << "a folder without preprocessor_config.json preprocessed an image";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("preprocessor_config.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace il::test
