// SigLIP through the command line: `embed --input` with {"pixel_values": [[[...]]]} lines (one
// image's C × H × W values, the parity form of image inputs) against transformers' image
// embeddings (the MAP head's pooler_output) and, with --output-kind hidden, its post-layernorm
// hidden states (tests/fixtures/siglip-joint and siglip-vision,
// tools/oracle/make_siglip_fixtures.py); lines of the wrong kind or shape are refused naming the
// line; pixel_values for a text-only model are refused.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "core/base64.h"

namespace il::cli_test {
namespace {

using nlohmann::json;

constexpr double kTolerance = 2e-5;  // as tests/oracle/siglip_test.cc (seen: 1.4e-6, 2.8e-6)

std::vector<std::string> pixel_lines(const json& expected) {
  std::vector<std::string> lines;
  for (const auto& c : expected["image_cases"]) lines.push_back(json{{"pixel_values", c["pixel_values"]}}.dump());
  return lines;
}

class SiglipCli : public ::testing::TestWithParam<std::string> {};

TEST_P(SiglipCli, ImageEmbeddingsAndHiddenStatesMatchTransformers) {
  const json expected = load_expected(GetParam());
  const std::vector<std::string> lines = pixel_lines(expected);
  ASSERT_EQ(lines.size(), 4u);
  ScratchDir tmp;
  const std::string input = tmp.write("images.jsonl", lines);
  const auto r = run_cli(cli_args({"embed", "--model", fixture_path(GetParam()), "--input", input, "--device", "cpu"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto out = r.lines();
  ASSERT_EQ(out.size(), lines.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto got = parse_line(out[i])["embedding"].get<std::vector<float>>();
    EXPECT_LE(max_abs_diff(got, expected["image_cases"][i]["pooled"].get<std::vector<float>>()), kTolerance)
        << "image " << i;
  }
  const auto h = run_cli(cli_args({"embed", "--model", fixture_path(GetParam()), "--input", input, "--output-kind",
                                   "hidden", "--device", "cpu"}));
  ASSERT_EQ(h.status, 0) << h.err;
  const auto hout = h.lines();
  ASSERT_EQ(hout.size(), lines.size());
  for (std::size_t i = 0; i < hout.size(); ++i) {
    const auto got = parse_line(hout[i])["hidden"].get<std::vector<std::vector<float>>>();
    const auto want = expected["image_cases"][i]["hidden"].get<std::vector<std::vector<float>>>();
    ASSERT_EQ(got.size(), want.size()) << "image " << i;
    for (std::size_t t = 0; t < got.size(); ++t) EXPECT_LE(max_abs_diff(got[t], want[t]), kTolerance);
  }
}

TEST_P(SiglipCli, RefusesLinesOfAnotherKindOrShape) {
  const json expected = load_expected(GetParam());
  std::vector<std::string> lines = pixel_lines(expected);
  ScratchDir tmp;
  const auto refused = [&](const std::vector<std::string>& in, const std::string& needle) {
    const auto r = run_cli(cli_args({"embed", "--model", fixture_path(GetParam()), "--input",
                                     tmp.write("bad.jsonl", in), "--device", "cpu"}));
    EXPECT_NE(r.status, 0) << needle;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    return r;
  };
  // A text line among images: the image before it is written, then line 2 is refused.
  const auto r = refused({lines[0], json{{"text", "a photo"}}.dump()}, "line 2");
  EXPECT_EQ(r.lines().size(), 1u) << "the output is the exact prefix before the bad line";
  refused({json{{"pixel_values", expected["image_cases"][0]["pixel_values"]}, {"text", "x"}}.dump()}, "text");
  refused({json{{"pixel_values", json::array({json::array({json::array({1.0, 2.0})})})}}.dump()}, "1 × 1 × 2");
  refused({json{{"pixel_values", json::array({json::array({json::array({1.0, 2.0}), json::array({1.0})})})}}.dump()},
          "row 1");
  if (GetParam() == "siglip-vision") refused({json{{"input_ids", {1, 2, 3}}}.dump()}, "takes images only");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SiglipCli, ::testing::Values("siglip-joint", "siglip-vision"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// The joint folder takes texts too: image lines and token-id lines mixed in one file come out in
// the input's order, each as transformers gives it (image: the MAP head; text: the text tower's
// pooled row, on ids padded to max_length as SiglipProcessor gives them).
TEST(SiglipCli, JointFolderEmbedsImagesAndTokenIdsInOrder) {
  const json expected = load_expected("siglip-joint");
  const std::vector<std::string> images = pixel_lines(expected);
  std::vector<std::string> lines;
  std::vector<std::vector<float>> want;
  for (std::size_t i = 0; i < 4; ++i) {
    lines.push_back(images[i]);
    want.push_back(expected["image_cases"][i]["pooled"].get<std::vector<float>>());
    const auto& t = expected["text_cases"][i];
    lines.push_back(json{{"input_ids", t["input_ids"]}}.dump());
    want.push_back(t["pooled"].get<std::vector<float>>());
  }
  ScratchDir tmp;
  const auto r = run_cli(cli_args({"embed", "--model", fixture_path("siglip-joint"), "--input",
                                   tmp.write("mixed.jsonl", lines), "--device", "cpu"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto out = r.lines();
  ASSERT_EQ(out.size(), want.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    EXPECT_LE(max_abs_diff(parse_line(out[i])["embedding"].get<std::vector<float>>(), want[i]), kTolerance)
        << "line " << i + 1;
}

// A folder as google/siglip checkpoints ship it (spiece.model, no tokenizer.json): texts typed as
// text embed as transformers gives them through SiglipTokenizer, padding="max_length" and
// truncation=True (tests/fixtures/siglip-spm-joint, tools/oracle/make_siglip_spm_model_fixture.py:
// captions, SigLIP's clean-up, special tokens typed in, two texts over 64 tokens; the engine
// refuses the fixture's empty text).
// With --no-truncate the long ones are refused naming the line.
TEST(SiglipCli, SpieceFolderEmbedsTextsAsTransformers) {
  const json expected = load_expected("siglip-spm-joint");
  std::vector<std::string> lines;
  std::vector<std::vector<float>> want;
  std::size_t first_long = 0;
  for (const auto& c : expected["text_cases"]) {
    if (c["text"] == "") continue;  // the engine refuses empty texts
    lines.push_back(json{{"text", c["text"]}}.dump());
    want.push_back(c["pooled"].get<std::vector<float>>());
    if (first_long == 0 && c["length"].get<std::size_t>() > 64) first_long = lines.size();
  }
  ASSERT_GT(first_long, 0u) << "the fixture has a text over 64 tokens";
  ScratchDir tmp;
  const std::string input = tmp.write("texts.jsonl", lines);
  const auto r = run_cli(cli_args({"embed", "--model", fixture_path("siglip-spm-joint"), "--input", input,
                                   "--device", "cpu"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto out = r.lines();
  ASSERT_EQ(out.size(), lines.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    EXPECT_LE(max_abs_diff(parse_line(out[i])["embedding"].get<std::vector<float>>(), want[i]), kTolerance)
        << lines[i];
  const auto strict = run_cli(cli_args({"embed", "--model", fixture_path("siglip-spm-joint"), "--input", input,
                                        "--device", "cpu", "--no-truncate"}));
  EXPECT_EQ(strict.status, 2) << strict.err;
  expect_contains(strict.err, {"line " + std::to_string(first_long), "more than the maximum of 64"});
  const auto info = run_cli(cli_args({"info", "--model", fixture_path("siglip-spm-joint")}));
  ASSERT_EQ(info.status, 0) << info.err;
  expect_contains(info.out, {"Unigram (spiece.model, SiglipTokenizer)"});
}

// A spiece.model with more pieces than the model's text vocabulary is not this model's tokenizer:
// the load is refused naming the file (one more piece appended to the fixture's: protobuf
// messages concatenate, so the appended field is the 701st piece).
TEST(SiglipCli, SpieceModelLargerThanTheVocabularyIsRefused) {
  ScratchDir tmp;
  const std::filesystem::path dir = copy_fixture("siglip-spm-joint", tmp);
  const std::string text = "zzqx";
  const std::string piece_body = std::string{0x0a, static_cast<char>(text.size())} + text + std::string{0x18, 0x01};
  std::ofstream(dir / "spiece.model", std::ios::binary | std::ios::app)
      << std::string{0x0a, static_cast<char>(piece_body.size())} << piece_body;
  const auto r = run_cli(cli_args({"info", "--model", dir.string()}));
  EXPECT_EQ(r.status, 1) << r.err;  // a model that does not load
  expect_contains(r.err, {"spiece.model holds 701 pieces", "text vocabulary has 700"});
}

// bench/configs/siglip-base-patch16-224.json builds with random weights and runs its vision
// tower on random images: 196 patch tokens an image; a length other than the patch count is
// refused. (siglip-so400m-patch14-384.json, 2 × 400M parameters, is run by hand: 729 patches.)
TEST(SiglipCli, BenchRunsTheVisionTowerOfSiglipBase) {
  const std::string config =
      (fixture_dir("siglip-joint").parent_path().parent_path().parent_path() / "bench" / "configs" /
       "siglip-base-patch16-224.json")
          .string();
  const auto r = run_cli(cli_args({"bench", "--config", config, "--grid", "2x196", "--warmup", "0", "--iters", "1",
                                   "--threads", "2"}));
  ASSERT_EQ(r.status, 0) << r.err;
  expect_contains(r.out, {"siglip-base-patch16-224", "image embedding", "12 layers, hidden 768", "image_encode"});
  const auto lines = r.lines();
  ASSERT_EQ(lines.size(), 3u) << r.out;
  expect_contains(lines[2], {" 2 ", " 196 ", " 392 "});
  const auto bad = run_cli(cli_args({"bench", "--config", config, "--grid", "1x64", "--iters", "1"}));
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("196 patch tokens"), std::string::npos) << bad.err;
}

TEST(SiglipCli, InfoDescribesTheImageInput) {
  const auto r = run_cli(cli_args({"info", "--model", fixture_path("siglip-joint")}));
  ASSERT_EQ(r.status, 0) << r.err;
  expect_contains(r.out, {"image_input", "3 × 32 × 32 pixel_values, 16 patches of 8 × 8", "32 dimensions",
                          "exp(2.48302) · cos(image, text) + -5.66187"});
  const auto j = run_cli(cli_args({"info", "--model", fixture_path("siglip-vision"), "--json"}));
  ASSERT_EQ(j.status, 0) << j.err;
  const json info = parse_line(j.lines().at(0));
  EXPECT_EQ(info["image"]["patch_size"], 8);
  EXPECT_EQ(info["image"]["embedding_dim"], 32);
  EXPECT_FALSE(info["image"].contains("logit")) << "the vision tower alone has no pair logit";
}

TEST(SiglipCli, PixelValuesForATextModelAreRefused) {
  ScratchDir tmp;
  const auto r = run_cli(cli_args({"embed", "--model", fixture_path("bert-mean"), "--input",
                                   tmp.write("img.jsonl", {R"({"pixel_values": [[[0.5]]]})"}), "--device", "cpu"}));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("takes no images"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace il::cli_test

namespace il::cli_test {
namespace {

// Image files, base64 and pixel_values through `embed`: the embeddings transformers gives for the
// files (tests/fixtures/siglip-joint/expected_images.json, tools/oracle/make_siglip_image_fixtures.py).
std::string image_path(const std::string& rel) { return (fixture_dir("siglip-joint").parent_path() / rel).string(); }

std::string base64_of_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string out;
  il::append_base64(out, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  return out;
}

TEST(SiglipCliImages, ImageFilesAndBase64GiveTransformersEmbeddings) {
  std::ifstream in(fixture_path("siglip-joint") + "/expected_images.json");
  const json expected = json::parse(in);
  std::vector<std::string> files;
  for (const auto& c : expected["images"]) files.push_back(image_path(c["file"].get<std::string>()));
  std::vector<std::string> args = {"embed", "--model", fixture_path("siglip-joint"), "--device", "cpu", "--image"};
  args.insert(args.end(), files.begin(), files.end());
  const auto r = run_cli(cli_args(args));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto out = r.lines();
  ASSERT_EQ(out.size(), files.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    EXPECT_LE(max_abs_diff(parse_line(out[i])["embedding"].get<std::vector<float>>(),
                           expected["images"][i]["embedding"].get<std::vector<float>>()),
              kTolerance)
        << files[i];
  // The same as JSON lines: a path, base64, a data: URI, in one run with a chunk boundary between.
  std::vector<std::string> lines = {json{{"image", files[0]}}.dump(), json{{"image_base64", base64_of_file(files[1])}}.dump(),
                                    json{{"image_base64", "data:image/jpeg;base64," + base64_of_file(files[2])}}.dump()};
  ScratchDir tmp;
  const auto j = run_cli(cli_args({"embed", "--model", fixture_path("siglip-joint"), "--device", "cpu", "--input",
                                   tmp.write("images.jsonl", lines), "--max-batch-tokens", "32"}));
  ASSERT_EQ(j.status, 0) << j.err;
  const auto jout = j.lines();
  ASSERT_EQ(jout.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_LE(max_abs_diff(parse_line(jout[i])["embedding"].get<std::vector<float>>(),
                           expected["images"][i]["embedding"].get<std::vector<float>>()),
              kTolerance)
        << "line " << i + 1;
}

TEST(SiglipCliImages, ABadImageStopsTheRunAfterTheLinesBeforeIt) {
  ScratchDir tmp;
  const std::string good = image_path("images/png_p8.png");
  const std::vector<std::string> lines = {json{{"image", good}}.dump(), json{{"image", good}}.dump(),
                                          json{{"image", image_path("images/png_truncated.png")}}.dump(),
                                          json{{"image", good}}.dump()};
  const auto r = run_cli(cli_args({"embed", "--model", fixture_path("siglip-joint"), "--device", "cpu", "--input",
                                   tmp.write("images.jsonl", lines)}));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.lines().size(), 2u) << "the two lines before the bad one are answered";
  EXPECT_NE(r.err.find("input line 3"), std::string::npos) << r.err;
  const auto missing = run_cli(cli_args({"embed", "--model", fixture_path("siglip-joint"), "--device", "cpu",
                                         "--image", (tmp.path() / "nope.jpg").string()}));
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("nope.jpg"), std::string::npos) << missing.err;
  const auto bad64 = run_cli(cli_args({"embed", "--model", fixture_path("siglip-joint"), "--device", "cpu", "--input",
                                       tmp.write("b.jsonl", {R"({"image_base64": "not base64!"})"})}));
  EXPECT_EQ(bad64.status, 2);
  EXPECT_NE(bad64.err.find("base64"), std::string::npos) << bad64.err;
  const auto text_model = run_cli(cli_args({"embed", "--model", fixture_path("bert-mean"), "--device", "cpu",
                                            "--image", good}));
  EXPECT_EQ(text_model.status, 2);
  EXPECT_NE(text_model.err.find("takes no images"), std::string::npos) << text_model.err;
}

}  // namespace
}  // namespace il::cli_test

namespace il::cli_test {
namespace {

TEST(SiglipCliImages, BenchTimesImagesEndToEndFromFiles) {
  const std::string dir = (fixture_dir("siglip-joint").parent_path() / "images" / "preprocess").string();
  const std::string one = dir + "/photo_64x48.png", two = dir + "/doc_300x1000.png";
  const auto r = run_cli(cli_args({"bench", "--config", fixture_path("siglip-joint"), "--grid", "3x16", "--images", one,
                                   two, "--iters", "1", "--warmup", "0", "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = r.lines();
  ASSERT_EQ(lines.size(), 2u);
  const json e2e = parse_line(lines[0]);
  EXPECT_EQ(e2e["e2e"], true);
  EXPECT_EQ(e2e["files"], 2);
  EXPECT_EQ(e2e["batch"], 3);
  EXPECT_GT(e2e["images_per_s"].get<double>(), 0.0);
  EXPECT_EQ(parse_line(lines[1])["tokens"], 48);
  const auto bad = run_cli(cli_args({"bench", "--config", fixture_path("siglip-joint"), "--grid", "1x16", "--images",
                                     dir + "/expected.json", "--iters", "1"}));
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--images file 1"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace il::cli_test
