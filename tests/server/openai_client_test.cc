// The official openai npm client (tools/server_client) against /v1/embeddings: its vectors must
// equal the CLI's. Missing node or node_modules fails under CI=true and skips loudly otherwise.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "server_test_util.h"

namespace il::server_test {
namespace {

std::filesystem::path client_dir() {
  const char* src = std::getenv("IL_SOURCE_DIR");
  return std::filesystem::path(src && *src ? src : IL_SOURCE_DIR_FALLBACK) / "tools" / "server_client";
}

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

TEST(OpenAiClient, EmbeddingsEqualTheCli) {
  const auto dir = client_dir();
  const bool have_node = std::system("node --version > /dev/null 2>&1") == 0;
  const bool have_client = std::filesystem::exists(dir / "node_modules" / "openai" / "package.json");
  if (!have_node || !have_client) {
    const std::string why = !have_node ? "node is not installed"
                                       : (dir / "node_modules").string() + " is missing (run: npm ci --prefix " +
                                             dir.string() + ")";
    if (in_ci()) FAIL() << "the openai client test cannot run under CI: " << why;
    GTEST_SKIP() << "SKIPPED, NOT PASSED: the openai client test needs node and the pinned client: " << why;
  }
  ServerProcess server("bert-mean", {"--api-key", "test-key"});
  ASSERT_TRUE(server.started());
  const std::vector<std::string> texts = {"hello world", "the openai client talks to us", "a"};
  cli_test::ScratchDir tmp;
  const std::string texts_file = tmp.write("texts.json", {json(texts).dump()});
  std::vector<std::string> lines;
  for (const auto& v : cli_embeddings("bert-mean", texts, {"--normalize"})) lines.push_back(json{{"embedding", v}}.dump());
  const std::string expected_file = tmp.write("expected.jsonl", lines);
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port());
  const std::string cmd = "node " + cli_test::quote((dir / "check_embeddings.mjs").string()) + " " +
                          cli_test::quote(url) + " test-key " + cli_test::quote(texts_file) + " " +
                          cli_test::quote(expected_file) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int status = pclose(p);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("ok:"), std::string::npos) << out;
  EXPECT_EQ(server.terminate(), 0);
}

// The client streams a chat completion with a page image from the tiny GLM-OCR: the text equals
// transformers' for the same page bytes (tests/fixtures/glm-ocr-pipeline).
TEST(OpenAiClient, StreamsAChatCompletionWithAnImage) {
  const auto dir = client_dir();
  const bool have_node = std::system("node --version > /dev/null 2>&1") == 0;
  const bool have_client = std::filesystem::exists(dir / "node_modules" / "openai" / "package.json");
  if (!have_node || !have_client) {
    if (in_ci()) FAIL() << "the openai client test cannot run under CI: node or the pinned client is missing";
    GTEST_SKIP() << "SKIPPED, NOT PASSED: the openai client test needs node and the pinned client";
  }
  ServerProcess server("glm-ocr-pipeline", {"--api-key", "test-key", "--device", "cpu"});
  ASSERT_TRUE(server.started());
  std::ifstream in(cli_test::fixture_dir("glm-ocr-pipeline") / "expected.json");
  const json e = json::parse(in);
  const json& c = e.at("cases")[0];
  cli_test::ScratchDir tmp;
  const std::string text_file = tmp.file("expected.txt");
  std::ofstream(text_file, std::ios::binary) << c.at("greedy_text").get<std::string>();
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port());
  const std::string cmd = "node " + cli_test::quote((dir / "check_chat.mjs").string()) + " " + cli_test::quote(url) +
                          " test-key " +
                          cli_test::quote((cli_test::fixture_dir("glm-ocr-pipeline") / "page1.png").string()) + " " +
                          cli_test::quote(text_file) + " " + std::to_string(c.at("greedy").size()) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int status = pclose(p);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("ok:"), std::string::npos) << out;
  EXPECT_EQ(server.terminate(), 0);
}

}  // namespace
}  // namespace il::server_test
