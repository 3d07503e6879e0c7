// The orientation reader and the eight transpositions, on hand-made inputs.
#include "image/exif_orientation.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace il::image::detail {
namespace {

// A 3x2 image whose pixel (x, y) is (x, y, 7).
RgbImage numbered(std::size_t w, std::size_t h) {
  RgbImage im;
  im.width = w;
  im.height = h;
  for (std::size_t y = 0; y < h; ++y)
    for (std::size_t x = 0; x < w; ++x) im.pixels.insert(im.pixels.end(), {std::uint8_t(x), std::uint8_t(y), 7});
  return im;
}

TEST(ExifOrientation, TranspositionsAsPil) {
  // Where input pixel (x, y) of a 3x2 image lands, for PIL's Transpose methods.
  const RgbImage in = numbered(3, 2);
  struct Case { int orientation; std::size_t w, h; std::size_t ox, oy; };  // output(0,0) = input(ox, oy)
  for (const Case c : {Case{1, 3, 2, 0, 0}, Case{2, 3, 2, 2, 0}, Case{3, 3, 2, 2, 1}, Case{4, 3, 2, 0, 1},
                       Case{5, 2, 3, 0, 0}, Case{6, 2, 3, 0, 1}, Case{7, 2, 3, 2, 1}, Case{8, 2, 3, 2, 0},
                       Case{0, 3, 2, 0, 0}, Case{9, 3, 2, 0, 0}}) {
    SCOPED_TRACE(c.orientation);
    const RgbImage out = apply_orientation(in, c.orientation);
    ASSERT_EQ(out.width, c.w);
    ASSERT_EQ(out.height, c.h);
    EXPECT_EQ(out.at(0, 0)[0], c.ox);
    EXPECT_EQ(out.at(0, 0)[1], c.oy);
  }
}

// A TIFF block whose IFD0 holds one Orientation entry of `type` and `count` (value: 4 bytes).
std::vector<std::uint8_t> tiff(bool big_endian, std::uint16_t type, std::uint32_t count, std::vector<std::uint8_t> value) {
  std::vector<std::uint8_t> t;
  auto put = [&](std::uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) t.push_back(std::uint8_t(v >> (8 * (big_endian ? bytes - 1 - i : i))));
  };
  t.push_back(big_endian ? 'M' : 'I');
  t.push_back(big_endian ? 'M' : 'I');
  put(42, 2);
  put(8, 4);
  put(1, 2);
  put(0x0112, 2);
  put(type, 2);
  put(count, 4);
  for (std::uint8_t b : value) t.push_back(b);
  return t;
}

TEST(ExifOrientation, TagTypesAsPillowReadsThem) {
  EXPECT_EQ(exif_orientation(tiff(false, 3, 1, {6, 0, 0, 0})), 6);
  EXPECT_EQ(exif_orientation(tiff(true, 3, 1, {0, 8, 0, 0})), 8);
  EXPECT_EQ(exif_orientation(tiff(false, 4, 1, {3, 0, 0, 0})), 3);
  EXPECT_EQ(exif_orientation(tiff(false, 3, 2, {3, 0, 6, 0})), 3);     // first value
  EXPECT_EQ(exif_orientation(tiff(false, 1, 1, {6, 0, 0, 0})), 0);     // bytes in Pillow
  EXPECT_EQ(exif_orientation(tiff(false, 2, 2, {'6', 0, 0, 0})), 0);   // text in Pillow
  EXPECT_EQ(exif_orientation(tiff(false, 99, 1, {6, 0, 0, 0})), std::nullopt);  // unknown type: skipped
  EXPECT_EQ(exif_orientation(tiff(false, 3, 0, {6, 0, 0, 0})), std::nullopt);   // no data: skipped
  EXPECT_EQ(exif_orientation(tiff(false, 3, 4, {200, 0, 0, 0})), std::nullopt); // data past the end
  std::vector<std::uint8_t> with_prefix = {'E', 'x', 'i', 'f', 0, 0};
  for (std::uint8_t b : tiff(false, 3, 1, {5, 0, 0, 0})) with_prefix.push_back(b);
  EXPECT_EQ(exif_orientation(with_prefix), 5);
  EXPECT_FALSE(exif_is_tiff(std::vector<std::uint8_t>{'E', 'x', 'i', 'f', 0, 0, 'n', 'o', 'p', 'e'}));
  EXPECT_TRUE(exif_is_tiff(std::vector<std::uint8_t>{'E', 'x', 'i', 'f', 0, 0}));
}

TEST(ExifOrientation, Xmp) {
  EXPECT_EQ(xmp_orientation(R"(<a tiff:Orientation="6"/>)"), 6);
  EXPECT_EQ(xmp_orientation("<tiff:Orientation>3</tiff:Orientation>"), 3);
  EXPECT_EQ(xmp_orientation(R"(tiff:Orientation='6' tiff:Orientation="8")"), 8);
  EXPECT_EQ(xmp_orientation("tiff:Orientation=\"x\""), std::nullopt);
  EXPECT_EQ(xmp_orientation("tiff:Orientation"), std::nullopt);
}

}  // namespace
}  // namespace il::image::detail
