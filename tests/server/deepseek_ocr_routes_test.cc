// /ocr on the tiny DeepSeek-OCR-2 (tests/fixtures/deepseek-ocr2-pipeline: the fixture's weights,
// a tokenizer of our own, the image processor for its 64-pixel views): pages through the
// processor and the model's prompt give the same tokens as the ocr command, each page with its
// grounded blocks (an array; the parsing is unit-tested in tests/unit/ocr_grounding_test.cc),
// the model's tasks validated; /v1/chat/completions on the folder without a chat template: the
// plain conversation format ("<image>\n" + text), the same prompt as the OCR task's; v1's
// resolution modes ("mode") as the ocr command's --mode.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "server_test_util.h"

namespace il::server_test {
namespace {

const char* kModel = "deepseek-ocr2-pipeline";

std::string b64_page(const std::string& page, const char* model = kModel) {
  return base64_file(cli_test::fixture_dir(model) / page);
}

TEST(DeepseekOcrRoute, PagesGiveTheOcrCommandsTokensWithBlocks) {
  const auto folder = cli_test::fixture_dir(kModel);
  cli_test::ScratchDir dir;
  const cli_test::RunResult cli =
      cli_test::run_cli_bounded({"ocr", "-m", folder.string(), "--device", "cpu", "--format", "json",
                                 "--max-new-tokens", "5", (folder / "page1.png").string(),
                                 (folder / "page2.png").string()},
                                dir);
  ASSERT_EQ(cli.status, 0) << cli.err;
  const auto lines = cli.lines();
  ASSERT_EQ(lines.size(), 2u);

  ServerProcess server(kModel, {"--device", "cpu"});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  auto r = post(c, "/ocr", {{"images", json::array({b64_page("page1.png"), b64_page("page2.png")})}, {"max_tokens", 5}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = body_of(r);
  ASSERT_EQ(j.at("pages").size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const json want = json::parse(lines[i]);
    const json& got = j.at("pages")[i];
    EXPECT_EQ(got.at("tokens"), want.at("tokens").size());
    EXPECT_EQ(got.at("text"), want.at("text"));
    ASSERT_TRUE(got.at("blocks").is_array()) << got;
    EXPECT_EQ(got.at("blocks"), want.at("blocks"));
  }
  r = post(c, "/ocr", {{"images", json::array({b64_page("page1.png")})}, {"task", "formula"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 422) << r->body;  // a validation error, as the other routes answer one
  EXPECT_NE(r->body.find("markdown"), std::string::npos) << r->body;
  r = post(c, "/ocr", {{"images", json::array({b64_page("page2.png")})}, {"task", "describe"}, {"max_tokens", 2}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(server.terminate(), 0);
}

TEST(DeepseekOcrRoute, ChatWithAPageIsThePlainPrompt) {
  const auto folder = cli_test::fixture_dir(kModel);
  cli_test::ScratchDir dir;
  const cli_test::RunResult cli = cli_test::run_cli_bounded(
      {"ocr", "-m", folder.string(), "--device", "cpu", "--format", "json", "--task", "text", "--max-new-tokens", "4",
       (folder / "page1.png").string()},
      dir);
  ASSERT_EQ(cli.status, 0) << cli.err;
  const json want = json::parse(cli.lines().at(0));

  ServerProcess server(kModel, {"--device", "cpu"});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const json body = {
      {"max_tokens", 4},
      {"messages",
       json::array({{{"role", "user"},
                     {"content", json::array({{{"type", "image_url"},
                                               {"image_url", {{"url", "data:image/png;base64," + b64_page("page1.png")}}}},
                                              {{"type", "text"}, {"text", "Free OCR."}}})}}})}};
  auto r = post(c, "/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = body_of(r);
  EXPECT_EQ(j.at("usage").at("prompt_tokens"), want.at("prompt_tokens"));
  EXPECT_EQ(j.at("usage").at("completion_tokens"), want.at("tokens").size());
  EXPECT_EQ(j.at("choices")[0].at("message").at("content"), want.at("text"));
  EXPECT_EQ(server.terminate(), 0);
}

// "mode" on v1's folder (tests/fixtures/deepseek-ocr-pipeline): each mode's page prompt is the ocr
// command's for the same --mode (the rows per mode are checked in tests/cli); a mode the model
// lacks, or any mode on OCR-2's folder (it has none), is a validation error.
TEST(DeepseekOcrRoute, ModesAreTheOcrCommandsModes) {
  const char* v1 = "deepseek-ocr-pipeline";
  const auto folder = cli_test::fixture_dir(v1);
  cli_test::ScratchDir dir;
  ServerProcess server(v1, {"--device", "cpu"});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  std::set<int> counts;
  for (const char* mode : {"tiny", "base", "gundam"}) {
    SCOPED_TRACE(mode);
    const cli_test::RunResult cli =
        cli_test::run_cli_bounded({"ocr", "-m", folder.string(), "--device", "cpu", "--format", "json", "--mode", mode,
                                   "--max-new-tokens", "3", (folder / "page1.png").string()},
                                  dir);
    ASSERT_EQ(cli.status, 0) << cli.err;
    const json want = json::parse(cli.lines().at(0));
    auto r = post(c, "/ocr", {{"images", json::array({b64_page("page1.png", v1)})}, {"mode", mode}, {"max_tokens", 3}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json j = body_of(r);
    EXPECT_EQ(j.at("usage").at("prompt_tokens"), want.at("prompt_tokens"));
    EXPECT_EQ(j.at("pages")[0].at("text"), want.at("text"));
    counts.insert(want.at("prompt_tokens").get<int>());
  }
  EXPECT_EQ(counts.size(), 3u);  // the modes differ
  auto bad = post(c, "/ocr", {{"images", json::array({b64_page("page1.png", v1)})}, {"mode", "huge"}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 422) << bad->body;
  EXPECT_NE(bad->body.find("gundam"), std::string::npos) << bad->body;
  EXPECT_EQ(server.terminate(), 0);

  ServerProcess ocr2(kModel, {"--device", "cpu"});
  ASSERT_TRUE(ocr2.started());
  auto c2 = ocr2.client();
  bad = post(c2, "/ocr", {{"images", json::array({b64_page("page1.png")})}, {"mode", "base"}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 422) << bad->body;
  EXPECT_NE(bad->body.find("no resolution modes"), std::string::npos) << bad->body;
  EXPECT_EQ(ocr2.terminate(), 0);
}

}  // namespace
}  // namespace il::server_test
