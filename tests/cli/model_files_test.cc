// Tokenizer and weights files written to hurt the loader: a FIFO in their place (an open for
// reading waits for a writer forever) and a tokenizer.json nested a million levels deep (walking it
// overflowed the stack). Each must be refused promptly with an error naming the file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_test_util.h"

namespace il::cli_test {
namespace {

namespace fs = std::filesystem;

void expect_load_error(const RunResult& r, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.status, 1) << "status 124 means it blocked; stderr: " << r.err;
  expect_contains(r.err, parts);
}

TEST(ModelFiles, FifoInPlaceOfTokenizerOrWeightsIsRefusedPromptly) {
  ScratchDir tmp;
  const fs::path dir = copy_fixture("bert-mean", tmp);
  fs::remove(dir / "tokenizer.json");
  ASSERT_EQ(::mkfifo((dir / "tokenizer.json").c_str(), 0600), 0);
  expect_load_error(run_cli_bounded({"tokenize", "-m", dir.string(), "hello"}, tmp),
                    {(dir / "tokenizer.json").string(), "not a regular file (a FIFO)"});
  expect_load_error(run_cli_bounded({"embed", "-m", dir.string(), "hello"}, tmp),
                    {(dir / "tokenizer.json").string(), "not a regular file (a FIFO)"});

  const fs::path w = copy_fixture("bert-mean", tmp);
  fs::remove(w / "model.safetensors");
  ASSERT_EQ(::mkfifo((w / "model.safetensors").c_str(), 0600), 0);
  expect_load_error(run_cli_bounded({"embed", "-m", w.string(), "hello"}, tmp),
                    {(w / "model.safetensors").string(), "not a regular file (a FIFO)"});
}

TEST(ModelFiles, DeepJsonTokenizerIsRefused) {
  ScratchDir tmp;
  const fs::path dir = copy_fixture("bert-mean", tmp);
  const std::size_t levels = 1'000'000;
  std::ofstream(dir / "tokenizer.json", std::ios::trunc)
      << "{\"model\": " + std::string(levels, '[') + std::string(levels, ']') + "}";
  expect_load_error(run_cli_bounded({"tokenize", "-m", dir.string(), "hello"}, tmp),
                    {(dir / "tokenizer.json").string(), "nested deeper than 128 levels"});
}

}  // namespace
}  // namespace il::cli_test
