// decode_image against PIL: every committed fixture image decodes to exactly the RGB bytes that
// transformers' load_image gives (Image.open, ImageOps.exif_transpose, convert("RGB")), recorded
// as width, height and SHA-256 in tests/fixtures/images/expected.json by the GPU machine's Pillow
// 12.3.0 through transformers 5.17.0; an image PIL refuses is refused. No tolerance, JPEG
// included: Pillow's wheel there bundles libjpeg-turbo 3.1.4 and libwebp 1.6.0, Debian here has
// 2.1.5 and 1.2.4, and every JPEG (baseline 4:2:0, 4:2:2, 4:4:4, gray, CMYK, YCCK, progressive)
// and lossy WebP came out bit-identical: the ISLOW IDCT, fancy upsampling and VP8 decoding are
// exact integer arithmetic in both. Regenerate with tools/images/make_decode_fixtures.py.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "image/decode.h"
#include "sha256.h"

namespace il::image {
namespace {

namespace fs = std::filesystem;

fs::path fixtures() {
  const char* src = std::getenv("IL_SOURCE_DIR");
  return fs::path(src && *src ? src : IL_SOURCE_DIR_FALLBACK) / "tests" / "fixtures" / "images";
}

std::vector<std::uint8_t> read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

constexpr DecodeLimits kLimits{1 << 20, 1 << 20};

TEST(DecodeImage, EveryFixtureAsPil) {
  std::ifstream f(fixtures() / "expected.json");
  ASSERT_TRUE(f) << "missing " << (fixtures() / "expected.json");
  const auto expected = nlohmann::json::parse(f);
  int checked = 0;
  for (const auto& [name, want] : expected.at("images").items()) {
    SCOPED_TRACE(name);
    const auto bytes = read_bytes(fixtures() / name);
    ASSERT_FALSE(bytes.empty());
    // PIL opens GIF too; decode_image reads JPEG, PNG and WebP only.
    if (want.contains("error") || name.starts_with("not_an_image")) {
      EXPECT_THROW(decode_image(bytes, name, kLimits), il::Error) << "PIL: " << want["error"];
      ++checked;
      continue;
    }
    try {
      const RgbImage image = decode_image(bytes, name, kLimits);
      EXPECT_EQ(image.width, want.at("width").get<std::size_t>());
      EXPECT_EQ(image.height, want.at("height").get<std::size_t>());
      ASSERT_EQ(image.pixels.size(), image.width * image.height * 3);
      EXPECT_EQ(test::sha256_hex(image.pixels), want.at("sha256").get<std::string>());
    } catch (const il::Error& e) {
      ADD_FAILURE() << "refused: " << e.what();
    }
    ++checked;
  }
  EXPECT_GE(checked, 80);
}

std::string error_of(std::span<const std::uint8_t> bytes, const DecodeLimits& limits, std::string_view name = "in.img") {
  try {
    decode_image(bytes, name, limits);
  } catch (const il::Error& e) {
    return e.what();
  }
  return "";
}

TEST(DecodeImage, ErrorsNameTheInputAndTheProblem) {
  const auto png = read_bytes(fixtures() / "png_rgb8.png");  // 17x9
  const auto jpeg = read_bytes(fixtures() / "jpeg_420.jpg");
  const auto webp = read_bytes(fixtures() / "webp_lossy.webp");

  std::string e = error_of(png, {png.size() - 1, 1000}, "photo.png");
  EXPECT_NE(e.find("photo.png"), std::string::npos) << e;
  EXPECT_NE(e.find("too large"), std::string::npos) << e;
  EXPECT_NE(e.find(std::to_string(png.size())), std::string::npos) << e;

  for (const auto* bytes : {&png, &jpeg, &webp}) {
    e = error_of(*bytes, {1 << 20, 17 * 9 - 1});
    EXPECT_NE(e.find("in.img: too large: 17x9 = 153 pixels, the limit is 152"), std::string::npos) << e;
    EXPECT_EQ(error_of(*bytes, {1 << 20, 17 * 9}), "");
  }

  const std::vector<std::uint8_t> gif = read_bytes(fixtures() / "not_an_image.gif");
  e = error_of(gif, kLimits);
  EXPECT_NE(e.find("not a JPEG, PNG or WebP"), std::string::npos) << e;
  EXPECT_NE(e.find("JPEG, PNG (APNG's first frame) and WebP"), std::string::npos) << e;
  EXPECT_NE(error_of({}, kLimits).find("empty"), std::string::npos);

  e = error_of(read_bytes(fixtures() / "png_truncated.png"), kLimits);
  EXPECT_NE(e.find("truncated PNG"), std::string::npos) << e;
  e = error_of(read_bytes(fixtures() / "jpeg_truncated.jpg"), kLimits);
  EXPECT_NE(e.find("truncated JPEG"), std::string::npos) << e;
  e = error_of(read_bytes(fixtures() / "png_bad_ihdr_crc.png"), kLimits);
  EXPECT_NE(e.find("bad checksum in chunk IHDR"), std::string::npos) << e;
}

// The pixel limit is checked from the header, before the decoder allocates: a 60000x60000 PNG
// header (3.6 G pixels) with almost no data is refused as too large, not as truncated.
TEST(DecodeImage, PixelLimitBeforeDecoding) {
  auto png = read_bytes(fixtures() / "png_rgb8.png");
  std::vector<std::uint8_t> big(png.begin(), png.begin() + 33);  // signature + IHDR
  const std::uint8_t dims[8] = {0, 0, 0xEA, 0x60, 0, 0, 0xEA, 0x60};
  std::copy(dims, dims + 8, big.begin() + 16);
  // fix the IHDR CRC so the only problem is the size
  std::uint32_t crc = 0xFFFFFFFFu;
  for (int i = 12; i < 29; ++i) {
    crc ^= big[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  crc ^= 0xFFFFFFFFu;
  for (int i = 0; i < 4; ++i) big[29 + i] = static_cast<std::uint8_t>(crc >> (24 - 8 * i));
  const std::string e = error_of(big, {1 << 20, 50'000'000});
  EXPECT_NE(e.find("too large: 60000x60000 = 3600000000 pixels"), std::string::npos) << e;
}

// Every prefix and many single-byte corruptions of each fixture: decoded or refused with
// il::Error, never a crash (ASan / UBSan builds and the fuzz target check the memory side).
TEST(DecodeImage, TruncationsAndCorruptionsAreErrorsOrImages) {
  int refused = 0, decoded = 0;
  for (const auto& entry : fs::directory_iterator(fixtures())) {
    if (!entry.is_regular_file() || entry.path().extension() == ".json") continue;
    const auto bytes = read_bytes(entry.path());
    for (std::size_t n = 0; n < bytes.size(); n += 1 + bytes.size() / 64) {
      std::span<const std::uint8_t> prefix(bytes.data(), n);
      (error_of(prefix, kLimits).empty() ? decoded : refused)++;
    }
    std::vector<std::uint8_t> flipped = bytes;
    for (std::size_t i = 0; i < flipped.size(); i += 1 + flipped.size() / 48) {
      flipped[i] ^= 0x5A;
      (error_of(flipped, kLimits).empty() ? decoded : refused)++;
      flipped[i] ^= 0x5A;
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(decoded, 0);
}

}  // namespace
}  // namespace il::image

namespace il::image {
namespace {

// A progressive JPEG whose last scan is repeated: 100 repeats decode (libjpeg only warns of the
// odd progression, as Pillow lets it), 600 pass the 500-scan limit and are refused.
TEST(DecodeImage, ProgressiveScanLimit) {
  const auto jpeg = read_bytes(fixtures() / "jpeg_progressive.jpg");
  std::size_t last_sos = 0;
  for (std::size_t i = 0; i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xDA) last_sos = i;
  }
  ASSERT_GT(last_sos, 0u);
  auto repeated = [&](int times) {
    std::vector<std::uint8_t> out(jpeg.begin(), jpeg.end() - 2);  // without EOI
    for (int t = 0; t < times; ++t) out.insert(out.end(), jpeg.begin() + last_sos, jpeg.end() - 2);
    out.insert(out.end(), {0xFF, 0xD9});
    return out;
  };
  EXPECT_EQ(error_of(repeated(100), kLimits), "");
  const std::string e = error_of(repeated(600), kLimits);
  EXPECT_NE(e.find("more than 500 progressive scans"), std::string::npos) << e;
}

}  // namespace
}  // namespace il::image
