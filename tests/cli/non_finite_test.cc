// Weights that make some outputs NaN: every line is still written (NaN as null), a warning names
// each such input on stderr, and the run ends with exit status 3. Before, null vectors came out
// with exit status 0 and nothing said.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace il::cli_test {
namespace {

namespace fs = std::filesystem;

// Overwrites `rows` rows (from `first`) of the F32 tensor `tensor` of a safetensors file with NaN.
void poison_rows(const fs::path& file, const std::string& tensor, std::size_t first, std::size_t rows) {
  std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
  uint64_t len = 0;
  f.read(reinterpret_cast<char*>(&len), 8);
  std::string h(len, '\0');
  f.read(h.data(), static_cast<std::streamsize>(len));
  const nlohmann::json e = nlohmann::json::parse(h).at(tensor);
  ASSERT_EQ(e.at("dtype"), "F32");
  const auto shape = e.at("shape").get<std::vector<std::size_t>>();
  std::size_t width = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) width *= shape[i];
  const std::vector<float> nan(rows * width, std::numeric_limits<float>::quiet_NaN());
  f.seekp(static_cast<std::streamoff>(8 + len + e.at("data_offsets")[0].get<std::size_t>() + first * width * 4));
  f.write(reinterpret_cast<const char*>(nan.data()), static_cast<std::streamsize>(nan.size() * 4));
  ASSERT_TRUE(f.good());
}

// Token 7's embedding row is NaN: only the inputs holding token 7 come out NaN (rows of a batch
// never mix outside attention, which stays within a sequence).
TEST(NonFinite, EmbeddingsAreReportedByLineAndExitStatus3) {
  ScratchDir tmp;
  const fs::path dir = copy_fixture("bert-mean", tmp);
  poison_rows(dir / "model.safetensors", "embeddings.word_embeddings.weight", 7, 1);
  const std::vector<std::string> lines = {R"({"input_ids": [2, 5, 3]})", R"({"input_ids": [2, 7, 3]})",
                                          R"({"input_ids": [2, 6, 3]})"};
  for (const std::string& kind : std::vector<std::string>{"pooled", "hidden"}) {
    SCOPED_TRACE(kind);
    const RunResult r = run_cli_bounded({"embed", "-m", dir.string(), "--output-kind", kind}, tmp, lines);
    EXPECT_EQ(r.status, 3) << r.err;
    ASSERT_EQ(r.lines().size(), 3u) << "every line is still written";
    EXPECT_EQ(r.lines()[0].find("null"), std::string::npos) << r.lines()[0];
    EXPECT_NE(r.lines()[1].find("null"), std::string::npos) << r.lines()[1];
    EXPECT_EQ(r.lines()[2].find("null"), std::string::npos) << r.lines()[2];
    expect_contains(r.err, {"warning: input line 2", "NaN or infinite", "1 of 3 outputs"});
    EXPECT_EQ(r.err.find("input line 1"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("input line 3"), std::string::npos) << r.err;
  }
  expect_contains(run_cli_bounded({"embed", "--help"}, tmp).out, {"exit status 3"});
}

TEST(NonFinite, ScoresAreReportedByLineAndExitStatus3) {
  ScratchDir tmp;
  const fs::path dir = copy_fixture("bert-ce", tmp);
  poison_rows(dir / "model.safetensors", "bert.embeddings.word_embeddings.weight", 7, 1);
  const RunResult r =
      run_cli_bounded({"rerank", "-m", dir.string()}, tmp,
                      {R"({"input_ids": [2, 5, 3]})", R"({"input_ids": [2, 6, 3]})", R"({"input_ids": [2, 7, 3]})"});
  EXPECT_EQ(r.status, 3) << r.err;
  ASSERT_EQ(r.lines().size(), 3u);
  EXPECT_EQ(r.lines()[2], R"({"score":null})");
  expect_contains(r.err, {"warning: input line 3", "1 of 3 outputs"});
  expect_contains(run_cli_bounded({"rerank", "--help"}, tmp).out, {"exit status 3"});

  // The ranked table: every score NaN (the embedding norm's weight), every document named, the
  // table still printed in input order (NaN ranks last, never breaking the sort).
  const fs::path all = copy_fixture("bert-ce", tmp);
  poison_rows(all / "model.safetensors", "bert.embeddings.LayerNorm.weight", 0, 1);
  const RunResult t = run_cli_bounded({"rerank", "-m", all.string(), "--query", "q", "first doc", "second doc"}, tmp);
  EXPECT_EQ(t.status, 3) << t.err;
  ASSERT_EQ(t.lines().size(), 3u) << t.out;
  EXPECT_NE(t.lines()[1].find("first doc"), std::string::npos) << t.out;
  expect_contains(t.err, {"text argument 1", "text argument 2", "2 of 2 outputs"});
}

}  // namespace
}  // namespace il::cli_test
