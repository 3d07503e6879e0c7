// Images into patch-token batches (runtime/image_batch.h): the patch order transformers' Conv2d +
// flatten(2).transpose(1, 2) gives (patch index = grid row · grid columns + column), each patch
// row in the conv weight's (channel, kernel row, kernel column) order, pixels past the last whole
// patch unread; packing whole images under a token budget; the input checks.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
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

}  // namespace
}  // namespace il::runtime
