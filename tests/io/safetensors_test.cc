#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "io_test_util.h"

namespace il::io {
namespace {

using nlohmann::json;
using test::assemble;
using test::build_safetensors;
using test::f32_tensor;
using test::RawTensor;
using test::error_of;
using test::TempDir;
using test::to_bytes;
using test::write_file;
using test::write_json;

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// Runs `fn`, expects il::Error, and returns its message.

// Expects opening a file whose header is `header` (data section `data`) to fail with a message
// holding every string in `parts`.
void expect_open_error(const std::string& header, const std::string& data, const std::vector<std::string>& parts) {
  TempDir dir;
  write_file(dir / "model.safetensors", assemble(header, data));
  const std::string msg = error_of([&] { SafeTensors::open(dir.path()); });
  EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
  for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in: " << msg;
}

TEST(SafeTensors, F32RoundTripKeepsEveryBit) {
  const std::vector<float> v = {1.5f,
                                -0.0f,
                                std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::denorm_min(),
                                3.4e38f,
                                -2.25f,
                                0.0f};
  TempDir dir;
  write_file(dir / "model.safetensors", build_safetensors({f32_tensor("w", {2, 4}, v)}));
  auto st = SafeTensors::open(dir.path());
  ASSERT_TRUE(st.has("w"));
  EXPECT_EQ(st.info("w").dtype, DType::kF32);
  EXPECT_EQ(st.info("w").shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(st.info("w").numel(), 8u);
  const auto got = st.load_f32("w", {2, 4});
  ASSERT_EQ(got.size(), v.size());
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(bits_of(got[i]), bits_of(v[i])) << i;
  EXPECT_EQ(st.total_bytes(), 32u);
  EXPECT_EQ(st.dominant_dtype(), DType::kF32);
}

TEST(SafeTensors, F16KnownValues) {
  const std::vector<uint16_t> h = {0x3C00, 0x8000, 0x7C00, 0xFC00, 0x0001, 0x03FF, 0x7BFF, 0xC000, 0x3555, 0x7E00};
  const std::vector<float> want = {1.0f,
                                   -0.0f,
                                   std::numeric_limits<float>::infinity(),
                                   -std::numeric_limits<float>::infinity(),
                                   std::ldexp(1.0f, -24),     // smallest subnormal
                                   std::ldexp(1023.0f, -24),  // largest subnormal
                                   65504.0f,
                                   -2.0f,
                                   0.333251953125f,
                                   0.0f};
  TempDir dir;
  write_file(dir / "model.safetensors", build_safetensors({{"h", "F16", {10}, to_bytes(h)}}));
  auto st = SafeTensors::open(dir / "model.safetensors");  // a file path works too
  const auto got = st.load_f32("h");
  ASSERT_EQ(got.size(), h.size());
  for (std::size_t i = 0; i + 1 < h.size(); ++i) EXPECT_EQ(bits_of(got[i]), bits_of(want[i])) << i;
  EXPECT_TRUE(std::isnan(got.back()));
  EXPECT_EQ(st.dominant_dtype(), DType::kF16);
}

TEST(SafeTensors, BF16KnownValues) {
  const std::vector<uint16_t> h = {0x3F80, 0x8000, 0x7F80, 0xFF80, 0x0001, 0xC040, 0x4049};
  TempDir dir;
  write_file(dir / "model.safetensors", build_safetensors({{"b", "BF16", {7}, to_bytes(h)}}));
  auto st = SafeTensors::open(dir.path());
  const auto got = st.load_f32("b", {7});
  ASSERT_EQ(got.size(), h.size());
  for (std::size_t i = 0; i < h.size(); ++i) EXPECT_EQ(bits_of(got[i]), static_cast<uint32_t>(h[i]) << 16) << i;
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[4], from_bits(0x00010000u));  // a float subnormal
  EXPECT_EQ(got[5], -3.0f);
  EXPECT_EQ(st.dominant_dtype(), DType::kBF16);
}

TEST(SafeTensors, UnalignedDataAndMetadataAndEdgeShapes) {
  // Header padded so the data section starts at an odd offset; the F32 tensor then sits at an
  // offset that is 4-byte aligned neither in the file nor in the data section.
  const std::vector<uint16_t> one = {0x3C00};
  const std::vector<float> v = {0.5f, -7.25f, 1e-30f};
  const std::string bytes = build_safetensors({{"a_half", "F16", {1}, to_bytes(one)},
                                               f32_tensor("b_float", {3}, v),
                                               {"c_empty", "F32", {0, 4}, ""},
                                               f32_tensor("d_scalar", {}, {42.0f})},
                                              201, json{{"format", "pt"}});
  ASSERT_EQ((8 + 201) % 4, 1);
  TempDir dir;
  write_file(dir / "model.safetensors", bytes);
  auto st = SafeTensors::open(dir.path());
  EXPECT_EQ(st.names(), (std::vector<std::string>{"a_half", "b_float", "c_empty", "d_scalar"}));
  EXPECT_FALSE(st.has("__metadata__"));
  EXPECT_EQ(st.load_f32("a_half"), std::vector<float>{1.0f});
  EXPECT_EQ(st.load_f32("b_float"), v);
  EXPECT_TRUE(st.load_f32("c_empty", {0, 4}).empty());
  EXPECT_EQ(st.load_f32("d_scalar", {}), std::vector<float>{42.0f});
  EXPECT_EQ(st.total_bytes(), 2u + 12u + 0u + 4u);
  EXPECT_EQ(st.dominant_dtype(), DType::kF32);

  SafeTensors moved = std::move(st);
  EXPECT_EQ(moved.load_f32("b_float"), v);
}

TEST(SafeTensors, MissingTensorAndShapeMismatchAreNamed) {
  TempDir dir;
  write_file(dir / "model.safetensors", build_safetensors({f32_tensor("layer.w", {2, 3}, std::vector<float>(6))}));
  auto st = SafeTensors::open(dir.path());
  EXPECT_FALSE(st.has("nope"));
  std::string msg = error_of([&] { st.info("nope"); });
  EXPECT_NE(msg.find("\"nope\""), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir.path().string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
  msg = error_of([&] { st.load_f32("nope"); });
  EXPECT_NE(msg.find("\"nope\""), std::string::npos) << msg;

  msg = error_of([&] { st.load_f32("layer.w", {3, 2}); });
  EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"layer.w\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected shape [3, 2]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("got [2, 3]"), std::string::npos) << msg;
}

TEST(SafeTensors, FolderWithoutWeightsAndMissingPath) {
  TempDir dir;
  std::string msg = error_of([&] { SafeTensors::open(dir.path()); });
  EXPECT_NE(msg.find(dir.path().string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.safetensors.index.json"), std::string::npos) << msg;
  msg = error_of([&] { SafeTensors::open(dir / "absent.safetensors"); });
  EXPECT_NE(msg.find("absent.safetensors"), std::string::npos) << msg;
}

TEST(SafeTensorsValidation, FileStructure) {
  TempDir dir;
  const auto file = dir / "model.safetensors";
  write_file(file, "1234567");
  std::string msg = error_of([&] { SafeTensors::open(file); });
  EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("7 bytes"), std::string::npos) << msg;

  std::string bytes = assemble("{}", "");
  bytes[0] = 100;  // header length 100 in a 10-byte file
  write_file(file, bytes);
  msg = error_of([&] { SafeTensors::open(file); });
  EXPECT_NE(msg.find("header length 100"), std::string::npos) << msg;

  bytes = assemble("{}", "");
  bytes[7] = 0x7f;  // absurd length
  write_file(file, bytes);
  msg = error_of([&] { SafeTensors::open(file); });
  EXPECT_NE(msg.find("header length"), std::string::npos) << msg;

  expect_open_error("{\"a\": ", "", {"not valid JSON"});
  expect_open_error("[1, 2]", "", {"JSON object"});
}

TEST(SafeTensorsValidation, EntriesNameFileAndTensor) {
  const std::string t = "encoder.layer.0.attention.self.query.weight";
  auto entry = [&](const std::string& body) { return "{\"" + t + "\": " + body + "}"; };
  const std::string data(32, '\0');
  const std::vector<std::string> named = {"\"" + t + "\""};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), named.begin(), named.end());
    return extra;
  };

  expect_open_error(entry(R"({"dtype":"I64","shape":[4],"data_offsets":[0,32]})"), data, with({"I64"}));
  expect_open_error(entry(R"({"dtype":"F64","shape":[4],"data_offsets":[0,32]})"), data, with({"F64"}));
  expect_open_error(entry(R"({"dtype":"BOOL","shape":[4],"data_offsets":[0,4]})"), data, with({"BOOL"}));
  expect_open_error(entry(R"({"dtype":7,"shape":[4],"data_offsets":[0,16]})"), data, with({"dtype"}));
  expect_open_error(entry(R"({"shape":[4],"data_offsets":[0,16]})"), data, with({"dtype"}));
  expect_open_error(entry(R"({"dtype":"F32","data_offsets":[0,16]})"), data, with({"shape"}));
  expect_open_error(entry(R"({"dtype":"F32","shape":[-4],"data_offsets":[0,16]})"), data, with({"shape"}));
  expect_open_error(entry(R"({"dtype":"F32","shape":[4.0],"data_offsets":[0,16]})"), data, with({"shape"}));
  expect_open_error(entry(R"({"dtype":"F32","shape":4,"data_offsets":[0,16]})"), data, with({"shape"}));
  expect_open_error(entry(R"({"dtype":"F32","shape":[4]})"), data, with({"data_offsets"}));
  expect_open_error(entry(R"({"dtype":"F32","shape":[4],"data_offsets":[0]})"), data, with({"data_offsets"}));
  expect_open_error(entry(R"({"dtype":"F32","shape":[4],"data_offsets":[0,-16]})"), data, with({"data_offsets"}));
  expect_open_error(entry(R"({"dtype":"F32","shape":[0],"data_offsets":[16,0]})"), data, with({"[16, 0]"}));
  expect_open_error(entry(R"({"dtype":"F32","shape":[4],"data_offsets":[0,12]})"), data, with({"16 bytes"}));
  expect_open_error(entry(R"({"dtype":"F32","shape":[1000000000000,1000000000000],"data_offsets":[0,16]})"), data,
                    with({"too large"}));
  expect_open_error(entry("[1,2]"), data, with({"object"}));

  // The exact message from the spec's example.
  TempDir dir;
  write_file(dir / "model.safetensors", assemble(entry(R"({"dtype":"F32","shape":[7],"data_offsets":[12,40]})"), data));
  const std::string msg = error_of([&] { SafeTensors::open(dir.path()); });
  EXPECT_NE(
      msg.find("model.safetensors: tensor \"" + t + "\": data_offsets [12, 40] end beyond data section of 32 bytes"),
      std::string::npos)
      << msg;
}

TEST(SafeTensorsValidation, OverlapNamesBothTensors) {
  const std::string header = R"({"first":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                             R"("second":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})";
  expect_open_error(header, std::string(32, '\0'), {"\"first\"", "\"second\"", "overlap"});
  // Zero-length tensors never overlap anything, and adjacent ranges are fine.
  TempDir dir;
  write_file(dir / "model.safetensors", assemble(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                                 R"("e":{"dtype":"F16","shape":[0],"data_offsets":[4,4]},)"
                                                 R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                                                 std::string(16, '\0')));
  EXPECT_NO_THROW(SafeTensors::open(dir.path()));
}

// Two shards plus an index, as transformers writes them.
void write_sharded(const TempDir& dir) {
  write_file(dir / "model-00001-of-00002.safetensors",
             build_safetensors({f32_tensor("a.weight", {2}, {1.0f, 2.0f}), f32_tensor("b.weight", {1}, {3.0f})}));
  write_file(dir / "model-00002-of-00002.safetensors",
             build_safetensors({{"c.weight", "BF16", {2}, to_bytes(std::vector<uint16_t>{0x4000, 0xC080})}}));
  write_json(dir / "model.safetensors.index.json", {{"metadata", {{"total_size", 14}}},
                                                    {"weight_map",
                                                     {{"a.weight", "model-00001-of-00002.safetensors"},
                                                      {"b.weight", "model-00001-of-00002.safetensors"},
                                                      {"c.weight", "model-00002-of-00002.safetensors"}}}});
}

TEST(SafeTensorsSharded, LoadsThroughIndex) {
  TempDir dir;
  write_sharded(dir);
  auto st = SafeTensors::open(dir.path());
  EXPECT_EQ(st.names(), (std::vector<std::string>{"a.weight", "b.weight", "c.weight"}));
  EXPECT_EQ(st.info("c.weight").file.filename(), "model-00002-of-00002.safetensors");
  EXPECT_EQ(st.info("a.weight").file.filename(), "model-00001-of-00002.safetensors");
  EXPECT_EQ(st.load_f32("a.weight"), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(st.load_f32("c.weight", {2}), (std::vector<float>{2.0f, -4.0f}));
  EXPECT_EQ(st.total_bytes(), 16u);
  EXPECT_EQ(st.dominant_dtype(), DType::kF32);
  const std::string msg = error_of([&] { st.info("zzz"); });
  EXPECT_NE(msg.find("model-00002-of-00002.safetensors"), std::string::npos) << msg;

  // The index file itself can be passed too.
  auto st2 = SafeTensors::open(dir / "model.safetensors.index.json");
  EXPECT_EQ(st2.names().size(), 3u);
}

TEST(SafeTensorsSharded, IndexErrorsNameTheFile) {
  auto expect_index_error = [](const std::function<void(const TempDir&)>& edit, std::vector<std::string> parts) {
    TempDir dir;
    write_sharded(dir);
    edit(dir);
    const std::string msg = error_of([&] { SafeTensors::open(dir.path()); });
    parts.push_back("model.safetensors.index.json");
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in: " << msg;
  };
  expect_index_error([](const TempDir& d) { std::filesystem::remove(d / "model-00002-of-00002.safetensors"); },
                     {"model-00002-of-00002.safetensors", "not found", "c.weight"});
  expect_index_error([](const TempDir& d) { write_file(d / "model.safetensors.index.json", "{\"weight_map\": {"); },
                     {"not valid JSON"});
  expect_index_error(
      [](const TempDir& d) {
        write_json(d / "model.safetensors.index.json", {{"metadata", {}}});
      },
      {"weight_map"});
  expect_index_error(
      [](const TempDir& d) {
        write_json(d / "model.safetensors.index.json", {{"weight_map",
                                                         {{"a.weight", "model-00001-of-00002.safetensors"},
                                                          {"ghost.weight", "model-00002-of-00002.safetensors"}}}});
      },
      {"\"ghost.weight\"", "model-00002-of-00002.safetensors", "does not contain"});
  expect_index_error(
      [](const TempDir& d) {
        write_json(d / "model.safetensors.index.json", {{"weight_map", {{"a.weight", 3}}}});
      },
      {"\"a.weight\""});
  expect_index_error(
      [](const TempDir& d) {
        write_json(d / "model.safetensors.index.json", {{"weight_map", {{"a.weight", "../outside.safetensors"}}}});
      },
      {"\"a.weight\"", "../outside.safetensors"});

  // A broken shard is reported with the shard's own name and the tensor.
  TempDir dir;
  write_sharded(dir);
  write_file(dir / "model-00002-of-00002.safetensors",
             assemble(R"({"c.weight":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})", std::string(16, '\0')));
  const std::string msg = error_of([&] { SafeTensors::open(dir.path()); });
  EXPECT_NE(msg.find("model-00002-of-00002.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"c.weight\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("I64"), std::string::npos) << msg;
}

TEST(SafeTensorsSharded, SingleFileWinsOverIndex) {
  TempDir dir;
  write_sharded(dir);
  write_file(dir / "model.safetensors", build_safetensors({f32_tensor("only", {1}, {9.0f})}));
  auto st = SafeTensors::open(dir.path());
  EXPECT_EQ(st.names(), std::vector<std::string>{"only"});
}

}  // namespace
}  // namespace il::io
