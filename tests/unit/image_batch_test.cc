// Images into patch-token batches (runtime/image_batch.h): the patch order transformers' Conv2d +
// flatten(2).transpose(1, 2) gives (patch index = grid row · grid columns + column), each patch
// row in the conv weight's (channel, kernel row, kernel column) order, pixels past the last whole
// patch unread; packing whole images under a token budget; the input checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>

#include "core/error.h"
#include "core/thread_pool.h"
#include "image/preprocess.h"
#include "ops/image_patches.h"
#include "runtime/image_batch.h"

namespace il::runtime {
namespace {

// Pixel (c, y, x) holds 100c + 10y + x, so a patch row can be read back by eye.
ImageInput numbered(std::size_t c, std::size_t h, std::size_t w) {
  ImageInput im{c, h, w, {}};
  for (std::size_t k = 0; k < c; ++k)
    for (std::size_t y = 0; y < h; ++y)
      for (std::size_t x = 0; x < w; ++x) im.pixels.push_back(static_cast<float>(100 * k + 10 * y + x));
  return im;
}

TEST(ImageBatch, CutsPatchesInConvOrder) {
  // 2 channels, 5 × 7 pixels, patch 2: a 2 × 3 grid; row 4 and column 6 are not read.
  const models::ImageGeometry g{2, 5, 7, 2};
  ASSERT_EQ(g.patches(), 6u);
  const std::vector<ImageInput> in = {numbered(2, 5, 7), numbered(2, 5, 7)};
  const plan::Batch b = make_image_batch(in, {0, 2}, g);
  EXPECT_EQ(b.patch_dim, 8u);
  EXPECT_EQ(b.seq_starts, (std::vector<int32_t>{0, 6, 12}));
  EXPECT_EQ(b.tokens.size(), 12u);
  EXPECT_EQ(b.positions, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}));
  // Patch 4 = grid row 1, column 1: pixels y 2..3, x 2..3, channel 0 then 1.
  const std::vector<float> want = {22, 23, 32, 33, 122, 123, 132, 133};
  const std::vector<float> got(b.patches.begin() + 4 * 8, b.patches.begin() + 5 * 8);
  EXPECT_EQ(got, want);
  // The second image's patch 2 (row 0, column 2): x 4..5.
  const std::vector<float> want2 = {4, 5, 14, 15, 104, 105, 114, 115};
  const std::vector<float> got2(b.patches.begin() + 8 * 8, b.patches.begin() + 9 * 8);
  EXPECT_EQ(got2, want2);
}

TEST(ImageBatch, PacksWholeImagesUnderTheBudget) {
  const auto r = pack_images(5, 16, 40);  // two images a batch
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].count, 2u);
  EXPECT_EQ(r[2].first, 4u);
  EXPECT_EQ(r[2].count, 1u);
  EXPECT_THROW(pack_images(1, 17, 16), Error);
}

TEST(ImageBatch, RefusesAnotherShapeOrNonFiniteValues) {
  const models::ImageGeometry g{3, 4, 4, 2};
  EXPECT_NO_THROW(validate_images({numbered(3, 4, 4)}, g));
  EXPECT_THROW(validate_images({numbered(1, 4, 4)}, g), Error);
  EXPECT_THROW(validate_images({numbered(3, 4, 5)}, g), Error);
  ImageInput short_pixels = numbered(3, 4, 4);
  short_pixels.pixels.pop_back();
  EXPECT_THROW(validate_images({short_pixels}, g), Error);
  ImageInput inf = numbered(3, 4, 4);
  inf.pixels[17] = INFINITY;
  try {
    validate_images({numbered(3, 4, 4), inf}, g);
    FAIL() << "an infinite pixel was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("image 1: pixel value 17 (channel 1, row 0, column 1)"), std::string::npos)
        << e.what();
  }
}

// The preprocessors the compact form must reproduce: SigLIP's (torchvision, the default, and the
// PIL classes), and CLIP's (another mean and std per channel, a crop), each with its rescale and
// normalise switched on and off.
std::vector<image::PreprocessorConfig> preprocessors() {
  std::vector<image::PreprocessorConfig> out;
  for (const char* type : {"SiglipImageProcessor", "CLIPImageProcessor"})
    for (image::ProcessorBackend backend : {image::ProcessorBackend::torchvision, image::ProcessorBackend::pil})
      for (int flags = 0; flags < 4; ++flags) {
        image::PreprocessorConfig c = image::parse_preprocessor_config(
            {{"image_processor_type", type}, {"size", {{"height", 21}, {"width", 27}}}, {"crop_size", 19}}, "test");
        c.backend = backend;
        c.do_rescale = (flags & 1) == 0;
        c.do_normalize = (flags & 2) == 0;
        if (flags == 3) c.rescale_factor = 1.0 / 127.0;  // an odd factor: PIL's double product matters
        out.push_back(c);
      }
  return out;
}

image::RgbImage random_rgb(std::size_t w, std::size_t h, uint32_t seed) {
  std::mt19937 rng(seed);
  image::RgbImage im{w, h, std::vector<std::uint8_t>(w * h * 3)};
  for (std::uint8_t& v : im.pixels) v = static_cast<std::uint8_t>(rng() & 0xff);
  return im;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(ImageBatch, CompactImagesHoldThePreprocessedValuesBitForBit) {
  // Every byte through every configuration, and whole odd-sized images through resize and crop.
  for (const image::PreprocessorConfig& c : preprocessors()) {
    const std::vector<float> table = image::byte_value_table(c);
    image::RgbImage ramp{256, 1, {}};
    for (int b = 0; b < 256; ++b) ramp.pixels.insert(ramp.pixels.end(), {std::uint8_t(b), std::uint8_t(b), std::uint8_t(b)});
    image::PreprocessorConfig keep = c;
    keep.do_resize = keep.do_center_crop = false;
    const ImageInput full = image::preprocess(ramp, keep);
    for (std::size_t ch = 0; ch < 3; ++ch)
      for (std::size_t b = 0; b < 256; ++b)
        ASSERT_EQ(std::memcmp(&table[ch * 256 + b], &full.pixels[ch * 256 + b], 4), 0)
            << c.processor_type << " channel " << ch << " byte " << b;
    for (const auto& [w, h] : {std::pair<std::size_t, std::size_t>{31, 17}, {9, 40}, {64, 48}}) {
      const image::RgbImage rgb = random_rgb(w, h, static_cast<uint32_t>(w * 100 + h));
      const ImageInput want = image::preprocess(rgb, c);
      const ImageInput got = image::preprocess_compact(rgb, c);
      ASSERT_TRUE(got.compact());
      EXPECT_EQ(got.height, want.height);
      EXPECT_EQ(got.width, want.width);
      EXPECT_TRUE(same_bits(got.pixel_values(), want.pixels)) << c.processor_type << " " << w << "x" << h;
    }
  }
}

TEST(ImageBatch, BytePatchRowsAreTheF32PatchRowsBitForBit) {
  // Odd geometries: pixels past the last whole patch (rows and columns) are never read.
  ThreadPool pool(2);
  struct Shape {
    int height, width, patch;
  };
  for (const image::PreprocessorConfig& c : preprocessors())
    for (const Shape sh : {Shape{19, 19, 4}, Shape{23, 17, 5}, Shape{16, 16, 16}}) {
      const models::ImageGeometry g{3, sh.height, sh.width, sh.patch};
      const auto table = std::make_shared<const std::vector<float>>(image::byte_value_table(c));
      std::vector<ImageInput> compact, expanded;
      for (uint32_t k = 0; k < 3; ++k) {
        ImageInput im{3, static_cast<std::size_t>(sh.height), static_cast<std::size_t>(sh.width), {}};
        im.bytes = random_rgb(im.width, im.height, 7 + k).pixels;
        im.byte_values = table;
        compact.push_back(im);
        ImageInput f = im;
        f.pixels = im.pixel_values();
        f.bytes.clear();
        f.byte_values.reset();
        expanded.push_back(f);
      }
      ASSERT_NO_THROW(validate_images(compact, g));
      const plan::Batch bytes = make_image_batch(compact, {0, 3}, g);
      const plan::Batch rows = make_image_batch(expanded, {0, 3}, g);
      ASSERT_TRUE(bytes.patches.empty());
      ASSERT_EQ(bytes.image_bytes.size(), 3 * g.patches() * g.patch_dim());  // the grid's pixels only
      EXPECT_NO_THROW(plan::check_batch(bytes, 1 << 20));
      EXPECT_EQ(bytes.positions, rows.positions);
      EXPECT_EQ(bytes.seq_starts, rows.seq_starts);
      // Two padding rows past the images: zeros, as patch_rows gives them.
      const std::size_t t = bytes.num_tokens(), dim = g.patch_dim(), ld = dim + 3;
      std::vector<float> got((t + 2) * ld, 0.5f), want((t + 2) * ld, 0.5f);
      ops::PatchBytesArgs a;
      a.bytes = bytes.image_bytes.data();
      a.byte_values = bytes.byte_values.data();
      a.channels = bytes.image_channels;
      a.patch = bytes.image_patch;
      a.image_rows = bytes.image_rows;
      a.image_cols = bytes.image_cols;
      a.num_rows = t;
      a.launched_rows = t + 2;
      a.out = ops::f32_view(got.data(), ld);
      ops::patch_bytes_cpu(a, pool);
      ops::patch_rows_cpu({rows.patches.data(), t, t + 2, dim, ops::f32_view(want.data(), ld)});
      EXPECT_TRUE(same_bits(got, want)) << c.processor_type << " " << sh.height << "x" << sh.width << "/" << sh.patch;
    }
}

TEST(ImageBatch, MixedTablesOrFormsFallBackToF32Rows) {
  const models::ImageGeometry g{3, 8, 8, 4};
  const auto siglip = std::make_shared<const std::vector<float>>(image::byte_value_table(preprocessors()[0]));
  const auto clip = std::make_shared<const std::vector<float>>(image::byte_value_table(preprocessors()[8]));
  ImageInput a{3, 8, 8, {}};
  a.bytes = random_rgb(8, 8, 1).pixels;
  a.byte_values = siglip;
  ImageInput b = a;
  b.byte_values = clip;
  ImageInput copy_of_table = a;  // an equal table in another allocation still shares the batch
  copy_of_table.byte_values = std::make_shared<const std::vector<float>>(*siglip);
  EXPECT_FALSE(make_image_batch({a, copy_of_table}, {0, 2}, g).image_bytes.empty());
  for (const std::vector<ImageInput>& in : {std::vector<ImageInput>{a, b}, {a, numbered(3, 8, 8)}}) {
    const plan::Batch batch = make_image_batch(in, {0, 2}, g);
    ASSERT_TRUE(batch.image_bytes.empty());
    std::vector<float> first(in[0].pixel_values());
    // Patch 0 of image 0, channel 0, first kernel row: the expanded bytes.
    for (std::size_t kx = 0; kx < 4; ++kx) EXPECT_EQ(batch.patches[kx], first[kx]);
  }
}

TEST(ImageBatch, RefusesBrokenCompactImages) {
  const models::ImageGeometry g{3, 4, 4, 2};
  const auto table = std::make_shared<const std::vector<float>>(3 * 256, 0.25f);
  ImageInput good{3, 4, 4, {}};
  good.bytes.assign(48, 9);
  good.byte_values = table;
  EXPECT_NO_THROW(validate_images({good}, g));
  ImageInput short_bytes = good;
  short_bytes.bytes.pop_back();
  EXPECT_THROW(validate_images({short_bytes}, g), Error);
  ImageInput no_table = good;
  no_table.byte_values.reset();
  EXPECT_THROW(validate_images({no_table}, g), Error);
  ImageInput both = good;
  both.pixels.assign(48, 0.0f);
  EXPECT_THROW(validate_images({both}, g), Error);
  ImageInput nan_table = good;
  auto bad = std::make_shared<std::vector<float>>(*table);
  (*bad)[300] = NAN;
  nan_table.byte_values = bad;
  try {
    validate_images({good, nan_table}, g);
    FAIL() << "a NaN byte value was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("image 1: byte value 44 of channel 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace il::runtime
