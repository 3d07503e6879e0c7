// `inferencelayer generate` on a DeepSeek-OCR-2 folder (tests/fixtures/deepseek-ocr2, from
// tools/oracle/make_deepseek_ocr_fixtures.py): the processor's names as the check form takes
// them, the pixel arrays given as {"npy": ...} files next to the input file; the greedy tokens,
// SAM's output (--output-kind sam) and the vision rows against transformers' recorded ones; the
// same for DeepSeek-OCR v1 (tests/fixtures/deepseek-ocr, its reference processor's names:
// num_local_crops, image_spatial_crop).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "io/npy.h"

namespace il::cli_test {
namespace {

nlohmann::json expected(const std::string& name = "deepseek-ocr2") {
  std::ifstream f(fixture_dir(name) / "expected.json");
  return nlohmann::json::parse(f);
}

std::vector<std::string> generate(const std::string& kind, const std::string& name = "deepseek-ocr2") {
  ScratchDir dir;
  const auto folder = fixture_dir(name);
  const RunResult r = run_cli_bounded({"generate", "-m", folder.string(), "--device", "cpu", "-i",
                                       (folder / "inputs.jsonl").string(), "--output-kind", kind, "--max-new-tokens",
                                       "20"},
                                      dir, {});
  EXPECT_EQ(r.status, 0) << r.err;
  return r.lines();
}

double max_abs(const nlohmann::json& got, const std::vector<double>& want, std::size_t offset = 0) {
  double err = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i)
    err = std::max(err, std::abs(got[i].get<double>() - want[offset + i]));
  return err;
}

void check_tokens(const std::string& name) {
  const nlohmann::json e = expected(name);
  const auto lines = generate("tokens", name);
  ASSERT_EQ(lines.size(), e.at("cases").size());
  for (std::size_t i = 0; i < lines.size(); ++i)
    EXPECT_EQ(nlohmann::json::parse(lines[i]).at("tokens"), e.at("cases")[i].at("greedy")) << "line " << i + 1;
}

TEST(DeepseekOcr2Cli, GreedyTokensFromNpyInputsMatchTransformers) { check_tokens("deepseek-ocr2"); }
TEST(DeepseekOcrV1Cli, GreedyTokensFromNpyInputsMatchTheReference) { check_tokens("deepseek-ocr"); }

// SAM after its stride-2 convolutions, NCHW per view: the tiles (sam_local), then the global view.
void check_sam(const std::string& name) {
  const nlohmann::json e = expected(name);
  const auto dir = fixture_dir(name);
  const auto lines = generate("sam", name);
  ASSERT_EQ(lines.size(), e.at("cases").size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const nlohmann::json& c = e.at("cases")[i];
    const nlohmann::json views = nlohmann::json::parse(lines[i]).at("sam");
    std::vector<io::NpyArray> want;
    std::vector<std::size_t> per_view;
    if (c.contains("sam_local")) {
      want.push_back(io::read_npy(dir / c.at("sam_local").at("npy").get<std::string>()));
      const auto& s = want.back().shape;
      for (int64_t t = 0; t < s.at(0); ++t) per_view.push_back(static_cast<std::size_t>(s[1] * s[2] * s[3]));
    }
    want.push_back(io::read_npy(dir / c.at("sam").at("npy").get<std::string>()));
    per_view.push_back(want.back().size());
    ASSERT_EQ(views.size(), per_view.size()) << c.at("name");
    std::size_t v = 0;
    double err = 0.0;
    for (const io::NpyArray& a : want)
      for (std::size_t off = 0; off < a.size(); off += per_view[v], ++v) {
        ASSERT_EQ(views[v].size(), per_view[v]);
        err = std::max(err, max_abs(views[v], a.values, off));
      }
    std::printf("[%s cli] %s: sam max-abs %.3g\n", name.c_str(), c.at("name").get<std::string>().c_str(), err);
    EXPECT_LE(err, 1e-4) << c.at("name");
  }
}

TEST(DeepseekOcr2Cli, SamOutputMatchesTransformers) { check_sam("deepseek-ocr2"); }
TEST(DeepseekOcrV1Cli, SamOutputMatchesTheReference) { check_sam("deepseek-ocr"); }

void check_vision(const std::string& name) {
  const nlohmann::json e = expected(name);
  const auto dir = fixture_dir(name);
  const auto lines = generate("vision", name);
  ASSERT_EQ(lines.size(), e.at("cases").size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const nlohmann::json& c = e.at("cases")[i];
    const io::NpyArray want = io::read_npy(dir / c.at("vision").at("npy").get<std::string>());
    const nlohmann::json rows = nlohmann::json::parse(lines[i]).at("vision");
    ASSERT_EQ(rows.size(), static_cast<std::size_t>(want.shape.at(0)));
    double err = 0.0;
    for (std::size_t r = 0; r < rows.size(); ++r) err = std::max(err, max_abs(rows[r], want.values, r * rows[r].size()));
    EXPECT_LE(err, 1e-4) << c.at("name");
  }
}

TEST(DeepseekOcr2Cli, VisionRowsMatchTransformers) { check_vision("deepseek-ocr2"); }
TEST(DeepseekOcrV1Cli, VisionRowsMatchTheReference) { check_vision("deepseek-ocr"); }

// v1 tiles need their grid; the names are v1's own.
TEST(DeepseekOcrV1Cli, TilesWithoutTheirGridAreRefused) {
  ScratchDir dir;
  const auto folder = fixture_dir("deepseek-ocr");
  std::ifstream in(folder / "inputs.jsonl");
  std::string line;
  for (int i = 0; i < 3; ++i) std::getline(in, line);
  nlohmann::json tiled = nlohmann::json::parse(line);
  ASSERT_TRUE(tiled.contains("image_spatial_crop"));
  for (auto& [k, v] : tiled.items())
    if (v.is_object() && v.contains("npy")) v["npy"] = (folder / v["npy"].get<std::string>()).string();
  const std::vector<std::string> args = {"generate", "-m", folder.string(), "--device", "cpu", "--max-new-tokens", "1"};
  nlohmann::json no_grid = tiled;
  no_grid.erase("image_spatial_crop");
  RunResult r = run_cli_bounded(args, dir, {no_grid.dump()});
  EXPECT_NE(r.status, 0);
  expect_contains(r.err, {"input line 1", "image_spatial_crop"});
  nlohmann::json wrong = tiled;
  wrong["image_spatial_crop"] = {{2, 2}};
  r = run_cli_bounded(args, dir, {wrong.dump()});
  EXPECT_NE(r.status, 0);
  expect_contains(r.err, {"input line 1", "image_spatial_crop", "6 tiles"});
  nlohmann::json v2_name = tiled;
  v2_name["num_local_patches"] = v2_name["num_local_crops"];
  v2_name.erase("num_local_crops");
  r = run_cli_bounded(args, dir, {v2_name.dump()});
  EXPECT_NE(r.status, 0);
  expect_contains(r.err, {"input line 1", "num_local_patches"});
}

TEST(DeepseekOcr2Cli, BadPageLinesAreRefusedNamingTheField) {
  ScratchDir dir;
  const auto folder = fixture_dir("deepseek-ocr2");
  const std::vector<std::string> args = {"generate", "-m", folder.string(), "--device", "cpu"};
  const RunResult missing = run_cli_bounded(args, dir, {R"({"input_ids":[0,1],"pixel_values":{"npy":"nope.npy"}})"});
  EXPECT_NE(missing.status, 0);
  expect_contains(missing.err, {"input line 1", "pixel_values", "nope.npy"});
  const RunResult flat = run_cli_bounded(args, dir, {R"({"input_ids":[0,1],"pixel_values":[[1,2,3]]})"});
  EXPECT_NE(flat.status, 0);
  expect_contains(flat.err, {"input line 1", "pixel_values"});
  const RunResult grid = run_cli_bounded(args, dir, {R"({"input_ids":[0,1],"image_grid_thw":[[1,2,2]]})"});
  EXPECT_NE(grid.status, 0);
  expect_contains(grid.err, {"input line 1", "image_grid_thw"});
}

}  // namespace
}  // namespace il::cli_test

namespace il::cli_test {
namespace {

// `ocr` on the same weights in a folder completed with a tokenizer of our own (its image token at
// config.json's id 300), an image processor for the tiny model's views (64-pixel global view,
// 48-pixel tiles) and two PNG pages: the processor (bit-exact against transformers in
// tests/image/deepseek_preprocess_test.cc) picks 3 × 2 tiles for the 70 × 46 page and 1 × 2 for
// the 40 × 88 one, so their prompts differ by (6 − 2) tiles of 144 query rows.
TEST(DeepseekOcr2Cli, OcrReadsPagesThroughTheProcessorAndPrompt) {
  ScratchDir dir;
  const auto folder = fixture_dir("deepseek-ocr2-pipeline");
  const RunResult r = run_cli_bounded({"ocr", "-m", folder.string(), "--device", "cpu", "--format", "json",
                                       "--max-new-tokens", "6", (folder / "page1.png").string(),
                                       (folder / "page2.png").string()},
                                      dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = r.lines();
  ASSERT_EQ(lines.size(), 2u);
  const nlohmann::json a = nlohmann::json::parse(lines[0]), b = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(a.at("tokens").size(), 6u);
  EXPECT_EQ(b.at("tokens").size(), 6u);
  EXPECT_EQ(a.at("prompt_tokens").get<int>() - b.at("prompt_tokens").get<int>(), 4 * 144);
  // A grounding model's pages carry their grounded blocks (runtime/ocr_grounding.h; parsing is
  // unit-tested in tests/unit/ocr_grounding_test.cc): an array, whatever random weights wrote.
  EXPECT_TRUE(a.at("blocks").is_array()) << lines[0];
  EXPECT_TRUE(b.at("blocks").is_array()) << lines[1];
  // The task changes the prompt's text only.
  const RunResult t = run_cli_bounded({"ocr", "-m", folder.string(), "--device", "cpu", "--format", "json",
                                       "--max-new-tokens", "2", "--task", "text", (folder / "page1.png").string()},
                                      dir);
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(nlohmann::json::parse(t.lines().at(0)).at("prompt_tokens"), a.at("prompt_tokens"));
  const RunResult bad = run_cli_bounded({"ocr", "-m", folder.string(), "--device", "cpu", "--task", "table",
                                         (folder / "page1.png").string()},
                                        dir);
  EXPECT_NE(bad.status, 0);
  expect_contains(bad.err, {"table", "markdown", "describe"});
}

// v1's `ocr` on the v1 weights with the same tokenizer (tests/fixtures/deepseek-ocr-pipeline): the
// modes at the tiny model's scale (native 64 pixels: tiny 32, small 40, base 64, large 80, Gundam
// 64 + tiles of 40), their image rows n · (n + 1) + 1 with n = side / 16 (2, 3, 4, 5: 7, 13, 21,
// 31), Gundam's tiles for the 70 × 46 page on a 3 × 2 grid ((2 · 3) · (3 · 3 + 1) = 60 rows more
// than base) and for the 40 × 88 page on 1 × 2 ((2 · 3) · (1 · 3 + 1) = 24 more).
TEST(DeepseekOcrV1Cli, OcrModesGiveTheirRowCounts) {
  ScratchDir dir;
  const auto folder = fixture_dir("deepseek-ocr-pipeline");
  const auto prompt_tokens = [&](const std::string& mode) {
    std::vector<std::string> args = {"ocr", "-m", folder.string(), "--device", "cpu", "--format", "json",
                                     "--max-new-tokens", "2", (folder / "page1.png").string(),
                                     (folder / "page2.png").string()};
    if (!mode.empty()) args.insert(args.end(), {"--mode", mode});
    const RunResult r = run_cli_bounded(args, dir);
    EXPECT_EQ(r.status, 0) << mode << ": " << r.err;
    std::vector<int> out;
    for (const std::string& l : r.lines()) {
      const nlohmann::json j = nlohmann::json::parse(l);
      EXPECT_TRUE(j.at("blocks").is_array());
      out.push_back(j.at("prompt_tokens").get<int>());
    }
    return out;
  };
  const std::vector<int> base = prompt_tokens("base");
  ASSERT_EQ(base.size(), 2u);
  EXPECT_EQ(base[0], base[1]);
  const int text = base[0] - 21;
  EXPECT_EQ(prompt_tokens("tiny"), (std::vector<int>{text + 7, text + 7}));
  EXPECT_EQ(prompt_tokens("small"), (std::vector<int>{text + 13, text + 13}));
  EXPECT_EQ(prompt_tokens("large"), (std::vector<int>{text + 31, text + 31}));
  const std::vector<int> gundam = {text + 21 + 60, text + 21 + 24};
  EXPECT_EQ(prompt_tokens("gundam"), gundam);
  EXPECT_EQ(prompt_tokens(""), gundam);  // the default

  const RunResult bad = run_cli_bounded({"ocr", "-m", folder.string(), "--device", "cpu", "--mode", "huge",
                                         (folder / "page1.png").string()},
                                        dir);
  EXPECT_NE(bad.status, 0);
  expect_contains(bad.err, {"huge", "gundam", "tiny", "large"});
  const auto ocr2 = fixture_dir("deepseek-ocr2-pipeline");
  const RunResult none = run_cli_bounded({"ocr", "-m", ocr2.string(), "--device", "cpu", "--mode", "base",
                                          (ocr2 / "page1.png").string()},
                                         dir);
  EXPECT_NE(none.status, 0);
  expect_contains(none.err, {"--mode", "no resolution modes"});
}

}  // namespace
}  // namespace il::cli_test
