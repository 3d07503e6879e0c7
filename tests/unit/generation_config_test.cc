// generation_config.json read by models::read_generation_config: end ids and pad id checked
// against the vocabulary, and the sampling a request that leaves a field out gets (as vLLM's
// OpenAI server takes the file: greedy unless do_sample; repetition_penalty either way).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "core/error.h"
#include "models/generation_config.h"

namespace il::models {
namespace {

class GenerationConfigFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("il_generation_config_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  GenerationDefaults read(const std::string& text) {
    std::ofstream(dir_ / "generation_config.json") << text;
    return read_generation_config(dir_, 100);
  }
  std::filesystem::path dir_;
};

TEST_F(GenerationConfigFile, NoFileMeansGreedyAndNoEndIds) {
  const GenerationDefaults g = read_generation_config(dir_, 100);
  EXPECT_TRUE(g.end_ids.empty());
  EXPECT_FALSE(g.pad_id.has_value());
  EXPECT_EQ(g.sampling.temperature, 0.0f);
  EXPECT_EQ(g.sampling.top_p, 1.0f);
  EXPECT_EQ(g.sampling.top_k, 0u);
  EXPECT_EQ(g.sampling.repetition_penalty, 1.0f);
}

TEST_F(GenerationConfigFile, SamplingOnlyWithDoSample) {
  const GenerationDefaults greedy =
      read(R"({"eos_token_id": [1, 7], "pad_token_id": 0, "temperature": 0.7, "top_k": 20, "repetition_penalty": 1.1})");
  EXPECT_EQ(greedy.end_ids, (std::vector<int32_t>{1, 7}));
  EXPECT_EQ(greedy.pad_id, 0);
  EXPECT_EQ(greedy.sampling.temperature, 0.0f) << "do_sample absent: greedy";
  EXPECT_EQ(greedy.sampling.top_k, 0u);
  EXPECT_FLOAT_EQ(greedy.sampling.repetition_penalty, 1.1f);
  const GenerationDefaults sampled = read(R"({"do_sample": true, "temperature": 0.7, "top_p": 0.8, "top_k": 20})");
  EXPECT_FLOAT_EQ(sampled.sampling.temperature, 0.7f);
  EXPECT_FLOAT_EQ(sampled.sampling.top_p, 0.8f);
  EXPECT_EQ(sampled.sampling.top_k, 20u);
  const GenerationDefaults bare = read(R"({"do_sample": true})");
  EXPECT_EQ(bare.sampling.temperature, 1.0f);
  EXPECT_EQ(bare.sampling.top_p, 1.0f);
  EXPECT_EQ(bare.sampling.top_k, 0u);
}

TEST_F(GenerationConfigFile, BadFieldsAreRefusedNamingThem) {
  const auto refused = [&](const std::string& text, const std::string& field) {
    try {
      read(text);
      ADD_FAILURE() << "accepted " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("generation_config.json"), std::string::npos) << e.what();
    }
  };
  refused(R"({"eos_token_id": 100})", "eos_token_id");
  refused(R"({"pad_token_id": -1})", "pad_token_id");
  refused(R"({"do_sample": "yes"})", "do_sample");
  refused(R"({"do_sample": true, "temperature": "hot"})", "temperature");
  refused(R"({"repetition_penalty": [1]})", "repetition_penalty");
  refused(R"({"temperature": 1e300})", "temperature");  // checked with or without do_sample
  refused(R"({"do_sample": true, "top_p": 0})", "top_p");
  refused(R"({"do_sample": true, "top_k": 2.5})", "top_k");
  refused(R"({"top_k": 1e300})", "top_k");
  refused(R"({"repetition_penalty": -1})", "repetition_penalty");
  refused(R"([1, 2])", "JSON object");
}

}  // namespace
}  // namespace il::models
