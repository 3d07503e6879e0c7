// `inferencelayer generate` on the GLM-OCR fixture (tests/fixtures/glm-ocr): the JSON-line check
// forms ({"tokens"}, --output-kind vision / logits) against transformers' recorded outputs, and
// bad lines refused with the line named.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_test_util.h"

namespace il::cli_test {
namespace {

nlohmann::json expected() {
  std::ifstream in(fixture_dir("glm-ocr") / "expected.json");
  return nlohmann::json::parse(in);
}

// One input line per fixture case, as transformers' processor output is written.
std::vector<std::string> input_lines(const nlohmann::json& e) {
  std::vector<std::string> lines;
  for (const auto& c : e.at("cases")) {
    nlohmann::json j;
    j["input_ids"] = c.at("input_ids");
    j["mm_token_type_ids"] = c.at("mm_token_type_ids");
    if (c.contains("pixel_values")) {
      j["pixel_values"] = c.at("pixel_values");
      j["image_grid_thw"] = c.at("image_grid_thw");
    }
    j["max_new_tokens"] = c.at("greedy").size();
    j["stop_ids"] = nlohmann::json::array();  // transformers ran with eos_token_id=None
    lines.push_back(j.dump());
  }
  return lines;
}

std::vector<std::string> base_args() {
  return {"generate", "-m", fixture_dir("glm-ocr").string(), "--device", "cpu", "--kv-page-size", "4"};
}

TEST(GenerateCli, TokensMatchTransformers) {
  ScratchDir dir;
  const nlohmann::json e = expected();
  const RunResult r = run_cli_bounded(base_args(), dir, input_lines(e));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = r.lines();
  ASSERT_EQ(lines.size(), e.at("cases").size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const nlohmann::json got = nlohmann::json::parse(lines[i]);
    EXPECT_EQ(got.at("tokens"), e.at("cases")[i].at("greedy")) << "line " << i + 1;
    EXPECT_EQ(got.size(), 1u) << "the check form is {\"tokens\": [...]} alone";
  }
}

TEST(GenerateCli, VisionAndLogitsOutputKinds) {
  ScratchDir dir;
  const nlohmann::json e = expected();
  const std::vector<std::string> lines = input_lines(e);
  std::vector<std::string> args = base_args();
  args.insert(args.end(), {"--output-kind", "logits"});
  const RunResult logits = run_cli_bounded(args, dir, lines);
  ASSERT_EQ(logits.status, 0) << logits.err;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto got = nlohmann::json::parse(logits.lines().at(i)).at("logits").get<std::vector<float>>();
    const auto want = e.at("cases")[i].at("last_logits").get<std::vector<float>>();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) ASSERT_NEAR(got[k], want[k], 1e-3) << "line " << i + 1;
  }
  // Vision: the image lines only (the text-only line has no pixel_values).
  std::vector<std::string> image_lines(lines.begin(), lines.begin() + 3);
  args = base_args();
  args.insert(args.end(), {"--output-kind", "vision"});
  const RunResult vision = run_cli_bounded(args, dir, image_lines);
  ASSERT_EQ(vision.status, 0) << vision.err;
  for (std::size_t i = 0; i < image_lines.size(); ++i) {
    const auto got = nlohmann::json::parse(vision.lines().at(i)).at("vision");
    const auto& want = e.at("cases")[i].at("vision");
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t r = 0; r < got.size(); ++r)
      for (std::size_t k = 0; k < got[r].size(); ++k)
        ASSERT_NEAR(got[r][k].get<double>(), want[r][k].get<double>(), 1e-3) << "line " << i + 1;
  }
}

TEST(GenerateCli, BadLinesAreRefusedNamingTheLine) {
  ScratchDir dir;
  const nlohmann::json e = expected();
  std::vector<std::string> lines = input_lines(e);
  auto bad = nlohmann::json::parse(lines[0]);
  bad["image_grid_thw"] = nlohmann::json::array({nlohmann::json::array({1, 4, 4})});
  const RunResult grid = run_cli_bounded(base_args(), dir, {lines[3], bad.dump()});
  EXPECT_EQ(grid.status, 2);
  expect_contains(grid.err, {"input line 2"});
  const RunResult field = run_cli_bounded(base_args(), dir, {R"({"input_ids": [1, 2], "temperatur": 1})"});
  EXPECT_EQ(field.status, 2);
  expect_contains(field.err, {"input line 1", "temperatur"});
  const RunResult oov = run_cli_bounded(base_args(), dir, {R"({"input_ids": [1, 256]})"});
  EXPECT_EQ(oov.status, 2);
  expect_contains(oov.err, {"input line 1", "vocabulary"});
  // Not a generating model.
  const RunResult embedder =
      run_cli_bounded({"generate", "-m", fixture_dir("bert-mean").string(), "--device", "cpu"}, dir, {lines[3]});
  EXPECT_EQ(embedder.status, 2);
  expect_contains(embedder.err, {"not a generating model"});
}

}  // namespace
}  // namespace il::cli_test
