// Model folders whose configs disagree with the tensors they describe: refused at load, naming
// the config file, the field, what the tensors hold and what the field says. Before, a token-type
// table or extra layers went unused silently, a Pooling dimension was never read, and other
// mismatches were reported as a tensor's shape rather than as the field to fix.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_test_util.h"

namespace il::cli_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void expect_load_error(const RunResult& r, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.status, 1) << r.err;
  expect_contains(r.err, parts);
}

// A safetensors file of zero-filled F32 tensors.
void write_safetensors(const fs::path& p, const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors) {
  json header = json::object();
  std::size_t bytes = 0;
  for (const auto& [name, shape] : tensors) {
    std::size_t n = 4;
    for (int64_t d : shape) n *= static_cast<std::size_t>(d);
    header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {bytes, bytes + n}}};
    bytes += n;
  }
  const std::string h = header.dump();
  std::string out(8, '\0');
  const uint64_t len = h.size();
  std::memcpy(out.data(), &len, 8);  // little-endian host, as the loader assumes
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << out + h + std::string(bytes, '\0');
}

TEST(ConfigCheck, ConfigFieldsDisagreeingWithTensorsAreRefused) {
  struct Case {
    const char* field;
    int value;
    std::vector<std::string> parts;  // beyond the file and the field
  };
  const std::vector<Case> cases = {
      {"type_vocab_size", 3, {"= 3", "embeddings.token_type_embeddings.weight", "expected 3 rows, found 2"}},
      // 0 means "no token-type table": the tensor was left unused and token_type_ids ignored.
      {"type_vocab_size", 0, {"= 0", "embeddings.token_type_embeddings.weight", "2 rows"}},
      {"vocab_size", 900, {"= 900", "embeddings.word_embeddings.weight", "expected 900 rows, found 800"}},
      {"max_position_embeddings", 32, {"= 32", "embeddings.position_embeddings.weight", "expected 32 rows, found 64"}},
      {"hidden_size", 64, {"= 64", "embeddings.word_embeddings.weight", "expected 64 columns, found 32"}},
      {"intermediate_size", 64, {"= 64", "encoder.layer.0.intermediate.dense.weight", "expected 64 rows, found 128"}},
      // The checkpoint has two layers; reading one would silently compute another model.
      {"num_hidden_layers", 1, {"= 1", "encoder.layer.1.", "holds more layers"}},
      {"num_hidden_layers", 3, {"= 3", "encoder.layer.2.", "fewer layers"}},
  };
  ScratchDir tmp;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.field) + " = " + std::to_string(c.value));
    const fs::path dir = copy_fixture("bert-mean", tmp);
    edit_json_file(dir / "config.json", [&](json& j) { j[c.field] = c.value; });
    const RunResult r = run_cli_bounded({"info", "-m", dir.string()}, tmp);
    expect_load_error(r, {(dir / "config.json").string(), std::string("\"") + c.field + "\""});
    expect_contains(r.err, c.parts);
  }

  const fs::path ce = copy_fixture("bert-ce", tmp);
  edit_json_file(ce / "config.json", [](json& j) {
    j["num_labels"] = 2;
    j.erase("id2label");
    j.erase("label2id");
  });
  expect_load_error(
      run_cli_bounded({"info", "-m", ce.string()}, tmp),
      {(ce / "config.json").string(), "\"num_labels\" = 2", "classifier.weight", "expected 2 rows, found 1"});
}

TEST(ConfigCheck, PoolingDimensionDisagreeingWithHiddenSizeIsRefused) {
  ScratchDir tmp;
  const fs::path dir = copy_fixture("bert-mean", tmp);
  edit_json_file(dir / "1_Pooling/config.json", [](json& j) { j["word_embedding_dimension"] = 384; });
  expect_load_error(
      run_cli_bounded({"info", "-m", dir.string()}, tmp),
      {(dir / "1_Pooling/config.json").string(), "\"word_embedding_dimension\" = 384", "expected 32", "hidden_size"});
  edit_json_file(dir / "1_Pooling/config.json", [](json& j) { j["word_embedding_dimension"] = "32"; });
  expect_load_error(run_cli_bounded({"info", "-m", dir.string()}, tmp),
                    {"1_Pooling/config.json", "word_embedding_dimension"});
}

TEST(ConfigCheck, DenseFeaturesDisagreeingWithTensorsAreRefused) {
  ScratchDir tmp;
  const fs::path dir = copy_fixture("bert-mean", tmp);
  // Transformer, Pooling, Dense (32 -> 16), Normalize.
  edit_json_file(dir / "modules.json", [](json& j) {
    j[2]["path"] = "3_Normalize";
    j[2]["idx"] = 3;
    j.insert(j.begin() + 2,
             json{{"idx", 2}, {"name", "2"}, {"path", "2_Dense"}, {"type", "sentence_transformers.models.Dense"}});
  });
  fs::rename(dir / "2_Normalize", dir / "3_Normalize");
  write_safetensors(dir / "2_Dense/model.safetensors", {{"linear.weight", {16, 32}}, {"linear.bias", {16}}});
  const auto dense = [&](int in, int out) {
    std::ofstream(dir / "2_Dense/config.json", std::ios::trunc) << json{{"in_features", in}, {"out_features", out}};
    return run_cli_bounded({"info", "-m", dir.string(), "--json"}, tmp);
  };
  const RunResult ok = dense(32, 16);
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(parse_line(ok.lines().at(0))["output_dim"], 16);

  expect_load_error(dense(32, 8), {(dir / "2_Dense/config.json").string(), "\"out_features\" = 8", "linear.weight",
                                   "expected 8 rows, found 16"});
  expect_load_error(dense(24, 16), {(dir / "2_Dense/config.json").string(), "\"in_features\" = 24", "expected 32"});
}

}  // namespace
}  // namespace il::cli_test
