// Model folders written to hurt the loader: JSON nested a million levels deep in every file we
// parse, FIFOs, devices and folders where files belong. Each must be refused promptly with an
// il::Error naming the file, never crash or block; symlinked files (Hugging Face cache folders)
// must keep loading.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "models/bert_config.h"
#include "io/safetensors.h"
#include "io/st_modules.h"
#include "io_test_util.h"

namespace il::io {
namespace {

using models::BertConfig;
using models::BertFlavor;
using models::load_bert_config;
using models::parse_bert_config;

namespace fs = std::filesystem;
using nlohmann::json;
using test::build_safetensors;
using test::f32_tensor;
using test::TempDir;
using test::write_file;
using test::write_json;

// `levels` arrays, one inside the other.
std::string nested_arrays(std::size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

json module(int idx, const std::string& path, const std::string& type) {
  return {{"idx", idx}, {"name", std::to_string(idx)}, {"path", path}, {"type", type}};
}

json small_bert_config() {
  return {{"model_type", "bert"},    {"hidden_size", 8}, {"num_hidden_layers", 1},       {"num_attention_heads", 2},
          {"intermediate_size", 16}, {"vocab_size", 10}, {"max_position_embeddings", 4}, {"type_vocab_size", 2}};
}

// A sentence-transformers folder touching every module file we read: config.json, modules.json,
// Pooling, Dense, prompts, max_seq_length, and one small weights file.
void write_st_folder(const TempDir& dir) {
  write_json(dir / "config.json", small_bert_config());
  write_json(dir / "modules.json", {module(0, "", "sentence_transformers.models.Transformer"),
                                    module(1, "1_Pooling", "sentence_transformers.models.Pooling"),
                                    module(2, "2_Dense", "sentence_transformers.models.Dense"),
                                    module(3, "3_Normalize", "sentence_transformers.models.Normalize")});
  write_json(dir / "1_Pooling/config.json", {{"word_embedding_dimension", 8}, {"pooling_mode_mean_tokens", true}});
  write_json(dir / "2_Dense/config.json", {{"in_features", 8}, {"out_features", 4}});
  write_json(dir / "config_sentence_transformers.json", {{"prompts", {{"query", "q: "}}}});
  write_json(dir / "sentence_bert_config.json", {{"max_seq_length", 4}});
  write_file(dir / "model.safetensors", build_safetensors({f32_tensor("a.weight", {2}, {1.0f, 2.0f})}));
}

// Every JSON file of a model folder, relative to it, and the loader that reads it.
struct ModelFile {
  std::string rel;
  std::function<void(const fs::path&)> load;
};

std::vector<ModelFile> model_files() {
  const auto config = [](const fs::path& d) { load_bert_config(d); };
  const auto modules = [](const fs::path& d) { load_sentence_transformer_info(d); };
  return {{"config.json", config},
          {"modules.json", modules},
          {"1_Pooling/config.json", modules},
          {"2_Dense/config.json", modules},
          {"config_sentence_transformers.json", modules},
          {"sentence_bert_config.json", modules}};
}

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const il::Error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_parts(const std::string& msg, const std::vector<std::string>& parts) {
  for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in: " << msg;
}

// Runs `load` on another thread and returns its error message. A loader still running after
// 5 s fails the test; `fifo` is then opened for writing and closed, which wakes an open or a read
// blocked on it, so a regression ends the test instead of hanging the suite.
std::string error_without_blocking(const fs::path& fifo, std::function<void()> load) {
  auto result = std::async(std::launch::async, [load] { return message_of(load); });
  if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "the loader blocked on the FIFO " << fifo;
    while (result.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // succeeds once a reader waits
      if (fd >= 0) ::close(fd);
    }
  }
  return result.get();
}

void make_fifo(const fs::path& p) {
  fs::remove(p);
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0) << p;
}

TEST(HostileFiles, DeepJsonInSafetensorsHeaderIsRefused) {
  // The tensor entry, and __metadata__, which the validator otherwise skips unread.
  for (const std::string& header :
       {"{\"t\": " + nested_arrays(1'000'000) + "}", "{\"__metadata__\": " + nested_arrays(1'000'000) + "}"}) {
    TempDir dir;
    write_file(dir / "model.safetensors", test::assemble(header, ""));
    expect_parts(message_of([&] { SafeTensors::open(dir.path()); }),
                 {(dir / "model.safetensors").string(), "nested deeper than 128 levels"});
  }
}

TEST(HostileFiles, DeepJsonInEveryModelFileIsRefused) {
  for (const ModelFile& f : model_files()) {
    TempDir dir;
    write_st_folder(dir);
    write_file(dir / f.rel, "{\"x\": " + nested_arrays(1'000'000) + "}");
    expect_parts(message_of([&] { f.load(dir.path()); }), {(dir / f.rel).string(), "nested deeper than 128 levels"});
  }
  TempDir dir;
  write_file(dir / "model.safetensors.index.json", "{\"weight_map\": " + nested_arrays(1'000'000) + "}");
  expect_parts(message_of([&] { SafeTensors::open(dir.path()); }),
               {"model.safetensors.index.json", "nested deeper than 128 levels"});
}

// Exactly 128 levels (the top object and 127 arrays) still load; one more is refused.
TEST(HostileFiles, NestingLimitIsExactly128Levels) {
  TempDir dir;
  json config = small_bert_config();
  write_file(dir / "config.json", config.dump().insert(1, "\"extra\": " + nested_arrays(127) + ","));
  EXPECT_EQ(load_bert_config(dir.path()).hidden, 8);
  write_file(dir / "config.json", config.dump().insert(1, "\"extra\": " + nested_arrays(128) + ","));
  expect_parts(message_of([&] { load_bert_config(dir.path()); }), {"config.json", "nested deeper than 128"});
}

// A shape of 50,000 ones is valid (one element). Messages are built from a bounded rendering of the
// shape, so checking it is linear; rendering the whole shape for every dimension took minutes.
TEST(HostileFiles, LongShapeIsCheckedInLinearTime) {
  TempDir dir;
  const json header = {{"t", {{"dtype", "F32"}, {"shape", std::vector<int64_t>(50'000, 1)}, {"data_offsets", {0, 4}}}}};
  write_file(dir / "model.safetensors", test::assemble(header.dump(), std::string(4, '\0')));
  const auto start = std::chrono::steady_clock::now();
  auto st = SafeTensors::open(dir.path());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(st.info("t").numel(), 1u);

  // A wrong value in it is still shown, cut.
  json bad = header;
  bad["t"]["shape"][49'999] = -1;
  write_file(dir / "model.safetensors", test::assemble(bad.dump(), std::string(4, '\0')));
  const std::string msg = message_of([&] { SafeTensors::open(dir.path()); });
  expect_parts(msg, {"must hold non-negative integers", "[1,1,1,"});
  EXPECT_LT(msg.size(), 600u) << msg;
}

TEST(HostileFiles, FifoInPlaceOfAnyModelFileIsRefused) {
  for (const ModelFile& f : model_files()) {
    TempDir dir;
    write_st_folder(dir);
    make_fifo(dir / f.rel);
    expect_parts(error_without_blocking(dir / f.rel, [&] { f.load(dir.path()); }),
                 {(dir / f.rel).string(), "not a regular file (a FIFO)"});
  }
  TempDir dir;
  make_fifo(dir / "model.safetensors");
  expect_parts(error_without_blocking(dir / "model.safetensors", [&] { SafeTensors::open(dir.path()); }),
               {(dir / "model.safetensors").string(), "not a regular file (a FIFO)"});
}

TEST(HostileFiles, FifoShardOrIndexIsRefused) {
  TempDir dir;
  write_file(dir / "model-00001-of-00001.safetensors", build_safetensors({f32_tensor("a.weight", {1}, {1.0f})}));
  make_fifo(dir / "model.safetensors.index.json");
  expect_parts(error_without_blocking(dir / "model.safetensors.index.json", [&] { SafeTensors::open(dir.path()); }),
               {"model.safetensors.index.json", "not a regular file (a FIFO)"});

  write_json(dir / "model.safetensors.index.json",
             {{"weight_map", {{"a.weight", "model-00001-of-00001.safetensors"}}}});
  ASSERT_EQ(SafeTensors::open(dir.path()).names().size(), 1u);
  make_fifo(dir / "model-00001-of-00001.safetensors");
  expect_parts(error_without_blocking(dir / "model-00001-of-00001.safetensors", [&] { SafeTensors::open(dir.path()); }),
               {"model-00001-of-00001.safetensors", "not a regular file (a FIFO)"});
}

TEST(HostileFiles, FolderOrDeviceInPlaceOfWeightsIsRefused) {
  TempDir dir;
  fs::create_directories(dir / "model.safetensors");
  expect_parts(message_of([&] { SafeTensors::open(dir.path()); }),
               {"model.safetensors", "not a regular file (a folder)"});
  TempDir dev;
  fs::create_symlink("/dev/zero", dev / "model.safetensors");
  expect_parts(message_of([&] { SafeTensors::open(dev.path()); }),
               {"model.safetensors", "not a regular file (a character device)"});
  fs::create_symlink("/dev/zero", dev / "config.json");
  expect_parts(message_of([&] { load_bert_config(dev.path()); }), {"config.json", "not a regular file"});
}

// A Hugging Face cache snapshot: every file is a symlink into blobs/. It loads as the files would.
TEST(HostileFiles, SymlinksToRegularFilesStillLoad) {
  TempDir src;
  write_st_folder(src);
  TempDir snap;
  for (const char* rel : {"config.json", "modules.json", "1_Pooling/config.json", "2_Dense/config.json",
                          "config_sentence_transformers.json", "sentence_bert_config.json", "model.safetensors"}) {
    fs::create_directories((snap / rel).parent_path());
    fs::create_symlink(src / rel, snap / rel);
  }
  EXPECT_EQ(load_bert_config(snap.path()).hidden, 8);
  const auto info = load_sentence_transformer_info(snap.path());
  ASSERT_TRUE(info.dense.has_value());
  EXPECT_EQ(info.dense->out_features, 4);
  EXPECT_EQ(info.prompts.at("query"), "q: ");
  EXPECT_EQ(SafeTensors::open(snap.path()).load_f32("a.weight"), (std::vector<float>{1.0f, 2.0f}));

  // A dangling link is "not found", naming the link.
  fs::remove(src / "config.json");
  expect_parts(message_of([&] { load_bert_config(snap.path()); }), {(snap / "config.json").string(), "not found"});
}

}  // namespace
}  // namespace il::io
