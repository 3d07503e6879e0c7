// pixel_values against transformers 5.17's image processors, on our synthetic photos and document
// pages (tests/fixtures/images/preprocess/*.png) for four preprocessor configs (SigLIP base 224
// bicubic, so400m-like 384, CLIP's legacy shortest-edge + center crop, a bilinear 256), through
// both of transformers' backends: the default (torchvision: SiglipImageProcessor,
// CLIPImageProcessor) and the *Pil classes. The fixture (expected.json, written on the GPU machine
// by tools/oracle/make_preprocess_fixtures.py) holds for each case the FNV-1a hash of the resized
// uint8 image, of the float32 pixel_values and 48 sampled values.
//
// Tolerance: none (max-abs 0 for every value). The resize is integer arithmetic after rounding
// double weights, which we reproduce; rescale and normalise are one IEEE float32 subtraction and
// one division per value (plus, for the PIL backend, a double product rounded to float32), done
// in the same order as torch / numpy. So the reference is exact and so must we be.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "core/error.h"
#include "fixture_util.h"
#include "image/preprocess.h"
#include "png_test_reader.h"

namespace il::image {
namespace {

std::vector<std::uint8_t> chw(const RgbImage& image) {
  const std::size_t plane = image.width * image.height;
  std::vector<std::uint8_t> out(3 * plane);
  for (std::size_t i = 0; i < plane; ++i) {
    for (std::size_t c = 0; c < 3; ++c) out[c * plane + i] = image.pixels[i * 3 + c];
  }
  return out;
}

std::string float_hash(const std::vector<float>& v) {
  static_assert(sizeof(float) == 4);
  return test::fnv1a64(v.data(), v.size() * sizeof(float));  // little-endian hosts, as the fixture
}

TEST(ImagePreprocess, MatchesTransformersProcessorsExactly) {
  const auto expected = test::read_fixture_json("expected.json");
  ASSERT_EQ(expected["info"]["transformers"], "5.17.0");
  std::map<std::string, RgbImage> images;
  int checked = 0;
  for (const auto& c : expected["cases"]) {
    const std::string name = c["image"], config_name = c["config"], backend = c["backend"];
    if (!images.count(name)) images[name] = test::read_png_rgb(test::fixture_dir() / name);
    PreprocessorConfig config = parse_preprocessor_config(expected["configs"][config_name], config_name);
    config.backend = backend == "pil" ? ProcessorBackend::pil : ProcessorBackend::torchvision;
    const std::string what = config_name + " / " + backend + " (" + c["class"].get<std::string>() + ") / " + name;

    const RgbImage resized = resize_and_crop(images[name], config);
    const auto u8 = chw(resized);
    EXPECT_EQ(test::fnv1a64(u8.data(), u8.size()), c["uint8_fnv1a64"].get<std::string>()) << what;

    const ImageInput in = preprocess(images[name], config);
    ASSERT_EQ(in.channels, c["shape"][0].get<std::size_t>()) << what;
    ASSERT_EQ(in.height, c["shape"][1].get<std::size_t>()) << what;
    ASSERT_EQ(in.width, c["shape"][2].get<std::size_t>()) << what;
    double worst = 0.0;
    for (const auto& s : c["samples"]) {
      const std::size_t pos = s[0];
      const float want = s[1].get<float>();
      worst = std::max(worst, std::abs(static_cast<double>(in.pixels.at(pos)) - want));
    }
    EXPECT_EQ(worst, 0.0) << what << ": sampled values differ by up to " << worst;
    EXPECT_EQ(float_hash(in.pixels), c["float_fnv1a64"].get<std::string>()) << what;
    ++checked;
  }
  EXPECT_EQ(checked, 64);  // 8 images × 4 configs × 2 backends
}

// What the generator measured between the two backends: they do differ (so the default matters),
// by at most 2 in a uint8 channel.
TEST(ImagePreprocess, BackendsDifferAsRecorded) {
  const auto expected = test::read_fixture_json("expected.json");
  for (const auto& [name, gap] : expected["backend_gap"].items()) {
    EXPECT_GE(gap["uint8_max_abs"].get<int>(), 1) << name;
    EXPECT_LE(gap["uint8_max_abs"].get<int>(), 2) << name;
  }
  const RgbImage photo = test::read_png_rgb(test::fixture_dir() / "photo_320x240.png");
  PreprocessorConfig config = parse_preprocessor_config(expected["configs"]["siglip_224"], "siglip_224");
  const ImageInput a = preprocess(photo, config);
  config.backend = ProcessorBackend::pil;
  const ImageInput b = preprocess(photo, config);
  double worst = 0.0;
  for (std::size_t i = 0; i < a.pixels.size(); ++i) worst = std::max(worst, double(std::abs(a.pixels[i] - b.pixels[i])));
  EXPECT_GT(worst, 0.0);
  EXPECT_LE(worst, expected["backend_gap"]["siglip_224"]["float_max_abs"].get<double>());
}

nlohmann::json siglip_json() {
  return nlohmann::json::parse(R"({
    "do_normalize": true, "do_rescale": true, "do_resize": true,
    "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
    "image_processor_type": "SiglipImageProcessor", "processor_class": "SiglipProcessor",
    "resample": 3, "rescale_factor": 0.00392156862745098, "size": {"height": 224, "width": 224}})");
}

TEST(ImagePreprocessConfig, ReadsSiglipAndClipForms) {
  const PreprocessorConfig s = parse_preprocessor_config(siglip_json(), "f.json");
  EXPECT_EQ(s.processor_type, "SiglipImageProcessor");
  EXPECT_EQ(s.backend, ProcessorBackend::torchvision);
  EXPECT_EQ(s.resize_height, 224u);
  EXPECT_EQ(s.resize_width, 224u);
  EXPECT_EQ(s.shortest_edge, 0u);
  EXPECT_EQ(s.resample, ResampleFilter::bicubic);
  EXPECT_FALSE(s.do_center_crop);

  // openai/clip-vit-base-patch32's legacy file: ints, feature_extractor_type, no do_rescale.
  const auto clip = nlohmann::json::parse(R"({"crop_size": 224, "do_center_crop": true, "do_normalize": true,
    "do_resize": true, "feature_extractor_type": "CLIPFeatureExtractor",
    "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
    "resample": 3, "size": 224})");
  const PreprocessorConfig c = parse_preprocessor_config(clip, "clip.json");
  EXPECT_EQ(c.processor_type, "CLIPImageProcessor");
  EXPECT_EQ(c.shortest_edge, 224u);
  EXPECT_TRUE(c.do_center_crop);
  EXPECT_EQ(c.crop_height, 224u);
  EXPECT_TRUE(c.do_rescale);

  // Fast / Pil suffixes and use_fast in the file do not change the backend: transformers 5.17
  // loads the torchvision class for all of them (recorded by the fixture generator).
  for (const char* type : {"SiglipImageProcessorFast", "SiglipImageProcessorPil"}) {
    auto j = siglip_json();
    j["image_processor_type"] = type;
    j["use_fast"] = false;
    EXPECT_EQ(parse_preprocessor_config(j, "f.json").backend, ProcessorBackend::torchvision) << type;
  }
  // Defaults of absent fields are the class's.
  const PreprocessorConfig bare =
      parse_preprocessor_config(nlohmann::json::parse(R"({"image_processor_type": "CLIPImageProcessor"})"), "f");
  EXPECT_EQ(bare.shortest_edge, 224u);
  EXPECT_FLOAT_EQ(static_cast<float>(bare.image_mean[0]), 0.48145466f);
}

std::string error_of(const nlohmann::json& j) {
  try {
    parse_preprocessor_config(j, "dir/preprocessor_config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ImagePreprocessConfig, ErrorsNameTheFileAndTheField) {
  auto j = siglip_json();
  j["image_processor_type"] = "Qwen2VLImageProcessor";
  EXPECT_NE(error_of(j).find("dir/preprocessor_config.json: image_processor_type \"Qwen2VLImageProcessor\""),
            std::string::npos)
      << error_of(j);
  j = siglip_json();
  j["do_pad"] = true;
  EXPECT_NE(error_of(j).find("field \"do_pad\""), std::string::npos) << error_of(j);
  j["do_pad"] = false;  // the no-op value is fine
  EXPECT_EQ(error_of(j), "");
  j = siglip_json();
  j["size"] = {{"longest_edge", 512}};
  EXPECT_NE(error_of(j).find("size.longest_edge"), std::string::npos) << error_of(j);
  j = siglip_json();
  j["size"]["height"] = -3;
  EXPECT_NE(error_of(j).find("size.height must be an integer"), std::string::npos) << error_of(j);
  j = siglip_json();
  j["default_to_square"] = true;  // changes what an int size means: not silently accepted
  EXPECT_NE(error_of(j).find("field \"default_to_square\""), std::string::npos) << error_of(j);
  j = siglip_json();
  j["resample"] = 9;
  EXPECT_NE(error_of(j).find("resample"), std::string::npos) << error_of(j);
  j = siglip_json();
  j["image_std"] = {0.5, 0.0, 0.5};
  EXPECT_NE(error_of(j).find("image_std[1] is zero"), std::string::npos) << error_of(j);
  j = siglip_json();
  j["image_mean"] = {0.5, 0.5};
  EXPECT_NE(error_of(j).find("image_mean"), std::string::npos) << error_of(j);
  j = siglip_json();
  j.erase("image_processor_type");
  EXPECT_NE(error_of(j).find("no image_processor_type"), std::string::npos) << error_of(j);
  EXPECT_NE(error_of(nlohmann::json::array()).find("expected a JSON object"), std::string::npos);
  EXPECT_THROW(read_preprocessor_config("/nonexistent/preprocessor_config.json"), Error);
}

TEST(ImagePreprocessConfig, RefusesFiltersTheTorchvisionBackendLacks) {
  auto j = siglip_json();
  j["resample"] = 4;  // BOX: torchvision cannot resize tensors with it
  const PreprocessorConfig c = parse_preprocessor_config(j, "f.json");
  RgbImage img{8, 8, std::vector<std::uint8_t>(8 * 8 * 3, 7)};
  EXPECT_THROW(preprocess(img, c), Error);
  PreprocessorConfig pil = c;
  pil.backend = ProcessorBackend::pil;
  EXPECT_EQ(preprocess(img, pil).pixels.size(), 3u * 224 * 224);
}

TEST(ImagePreprocess, CenterCropPadsSmallImages) {
  // A crop larger than the resized image: both backends pad with zeros, torchvision with the
  // extra row/column after the image, numpy's center_crop before it.
  PreprocessorConfig c;
  c.do_resize = false;
  c.do_center_crop = true;
  c.crop_height = 4;
  c.crop_width = 3;
  RgbImage img{2, 3, std::vector<std::uint8_t>(2 * 3 * 3, 200)};
  const RgbImage tv = resize_and_crop(img, c);
  ASSERT_EQ(tv.width, 3u);
  ASSERT_EQ(tv.height, 4u);
  // torchvision: pad left (3-2)//2 = 0, right 1; top (4-3)//2 = 0, bottom 1
  EXPECT_EQ(tv.at(0, 0)[0], 200);
  EXPECT_EQ(tv.at(2, 0)[0], 0);
  EXPECT_EQ(tv.at(0, 3)[0], 0);
  c.backend = ProcessorBackend::pil;
  const RgbImage np = resize_and_crop(img, c);
  // numpy: the image at ceil(1/2) = 1 from the top and the left
  EXPECT_EQ(np.at(0, 0)[0], 0);
  EXPECT_EQ(np.at(1, 1)[0], 200);
  EXPECT_EQ(np.at(2, 3)[0], 200);
  EXPECT_EQ(np.at(2, 0)[0], 0);
}

}  // namespace
}  // namespace il::image
