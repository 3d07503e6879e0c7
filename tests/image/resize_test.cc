// The resize alone against Pillow 12.3 (Image.resize, every filter) and torchvision 0.26 /
// torch 2.11 (resize of a uint8 tensor, antialias=True, bilinear and bicubic), on small odd
// sizes, up and down, one axis or both, and two large downscales. Expectations:
// tests/fixtures/images/preprocess/resize_expected.json, written on the GPU machine by
// tools/oracle/make_preprocess_fixtures.py (Pillow 9.4 gives the same bytes). Tolerance: none.
// Both libraries compute in integers after rounding double weights, so a faithful port is
// bit-exact; any difference is a bug.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "fixture_util.h"
#include "image/resize.h"

namespace il::image {
namespace {

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
          std::uint32_t h = (static_cast<std::uint32_t>(x) * 73856093u) ^ (static_cast<std::uint32_t>(y) * 19349663u) ^
                            (c * 83492791u);
          h *= 2654435761u;
          v = (h >> 24) & 0xFF;
        }
        img.pixels[(y * width + x) * 3 + c] = static_cast<std::uint8_t>(v);
      }
    }
  }
  return img;
}

std::string to_hex(const std::vector<std::uint8_t>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (auto b : bytes) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

TEST(ImageResize, MatchesPillowAndTorchvisionBitExactly) {
  const auto expected = test::read_fixture_json("resize_expected.json");
  int checked = 0;
  for (const auto& c : expected["cases"]) {
    if (c.contains("error")) continue;  // torch 2.11 asserts on a 1x1 output: nothing to match
    const std::size_t iw = c["in"][0], ih = c["in"][1], ow = c["out"][0], oh = c["out"][1];
    const std::string lib = c["lib"], name = c["filter"];
    ResampleFilter filter{};
    for (long long code = 0; code <= 5; ++code) {
      if (filter_name(*filter_from_pil_code(code)) == name) filter = *filter_from_pil_code(code);
    }
    const RgbImage src = synthetic(iw, ih);
    const RgbImage out = lib == "pillow" ? resize_pillow(src, ow, oh, filter) : resize_torch_uint8(src, ow, oh, filter);
    ASSERT_EQ(out.width, ow);
    ASSERT_EQ(out.height, oh);
    const std::string what = lib + " " + name + " " + std::to_string(iw) + "x" + std::to_string(ih) + " -> " +
                             std::to_string(ow) + "x" + std::to_string(oh);
    if (c.contains("hex")) {
      const std::string want = c["hex"];
      const std::string got = to_hex(out.pixels);
      int worst = 0, differing = 0;
      for (std::size_t i = 0; i + 1 < want.size() && i + 1 < got.size(); i += 2) {
        const int a = std::stoi(want.substr(i, 2), nullptr, 16), b = std::stoi(got.substr(i, 2), nullptr, 16);
        if (a != b) ++differing;
        worst = std::max(worst, std::abs(a - b));
      }
      EXPECT_TRUE(got == want) << what << ": " << differing << " of " << want.size() / 2
                               << " bytes differ, by up to " << worst;
    } else {
      EXPECT_EQ(test::fnv1a64(out.pixels.data(), out.pixels.size()), c["fnv1a64"].get<std::string>()) << what;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 78);  // 10 cases × 6 Pillow filters + 9 × 2 torchvision filters
}

TEST(ImageResize, FilterCodesArePils) {
  EXPECT_EQ(filter_from_pil_code(0), ResampleFilter::nearest);
  EXPECT_EQ(filter_from_pil_code(1), ResampleFilter::lanczos);
  EXPECT_EQ(filter_from_pil_code(2), ResampleFilter::bilinear);
  EXPECT_EQ(filter_from_pil_code(3), ResampleFilter::bicubic);
  EXPECT_EQ(filter_from_pil_code(4), ResampleFilter::box);
  EXPECT_EQ(filter_from_pil_code(5), ResampleFilter::hamming);
  EXPECT_FALSE(filter_from_pil_code(6).has_value());
  EXPECT_FALSE(filter_from_pil_code(-1).has_value());
}

// Normalised weights keep a flat colour flat, down or up, for every filter, from a single pixel
// too (each output then has one tap).
TEST(ImageResize, FlatImagesStayFlat) {
  for (auto [w, h] : {std::pair<std::size_t, std::size_t>{37, 23}, {1, 1}, {1, 9}}) {
    RgbImage flat{w, h, {}};
    for (std::size_t i = 0; i < w * h; ++i) flat.pixels.insert(flat.pixels.end(), {13, 200, 255});
    for (auto [ow, oh] : {std::pair<std::size_t, std::size_t>{5, 3}, {224, 224}, {1, 40}}) {
      for (long long code = 0; code <= 5; ++code) {
        const ResampleFilter f = *filter_from_pil_code(code);
        std::vector<RgbImage> outs{resize_pillow(flat, ow, oh, f)};
        if (f == ResampleFilter::bilinear || f == ResampleFilter::bicubic) outs.push_back(resize_torch_uint8(flat, ow, oh, f));
        for (const RgbImage& out : outs) {
          ASSERT_EQ(out.pixels.size(), ow * oh * 3);
          for (std::size_t i = 0; i < out.pixels.size(); i += 3) {
            ASSERT_EQ(out.pixels[i], 13) << filter_name(f) << " " << w << "x" << h << " -> " << ow << "x" << oh;
            ASSERT_EQ(out.pixels[i + 1], 200);
            ASSERT_EQ(out.pixels[i + 2], 255);
          }
        }
      }
    }
  }
}

TEST(ImageResize, SameSizeIsUnchanged) {
  const RgbImage src = synthetic(9, 7);
  EXPECT_EQ(resize_pillow(src, 9, 7, ResampleFilter::lanczos).pixels, src.pixels);
  EXPECT_EQ(resize_torch_uint8(src, 9, 7, ResampleFilter::bicubic).pixels, src.pixels);
}

TEST(ImageResize, RefusesWhatTheLibrariesCannotDo) {
  const RgbImage src = synthetic(9, 7);
  EXPECT_THROW(resize_torch_uint8(src, 4, 4, ResampleFilter::box), Error);
  EXPECT_THROW(resize_pillow(src, 0, 4, ResampleFilter::bicubic), Error);
  EXPECT_THROW(resize_pillow(RgbImage{}, 4, 4, ResampleFilter::bicubic), Error);
  RgbImage broken = src;
  broken.pixels.pop_back();
  EXPECT_THROW(resize_torch_uint8(broken, 4, 4, ResampleFilter::bilinear), Error);
}

}  // namespace
}  // namespace il::image
