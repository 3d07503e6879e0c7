// The table of architectures: an unknown model_type is refused with every supported one listed,
// and each row's config check runs the parser its folder builder uses.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/registry.h"

namespace il::models {
namespace {

std::string error_of(const nlohmann::json& config) {
  try {
    find_architecture(config, "config.json").check_config(config, "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Registry, AnUnknownModelTypeIsRefusedListingTheSupportedOnes) {
  const std::string msg = error_of({{"model_type", "llama"}});
  for (const char* part : {"config.json", "\"llama\"", "bert", "roberta", "xlm-roberta", "qwen3"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << " not in: " << msg;
  EXPECT_NE(error_of(nlohmann::json::array()).find("expected a JSON object"), std::string::npos);
  EXPECT_NE(error_of({{"hidden_size", 8}}).find("model_type"), std::string::npos);
}

TEST(Registry, EachArchitectureChecksItsOwnConfig) {
  EXPECT_EQ(find_architecture({{"model_type", "xlm-roberta"}}, "c").name, "bert");
  EXPECT_EQ(find_architecture({{"model_type", "qwen3"}}, "c").name, "qwen3");
  // A Qwen3 config naming a feature not implemented is refused by the Qwen3 parser, naming it.
  const nlohmann::json qwen3 = {{"model_type", "qwen3"},         {"hidden_size", 64},       {"num_hidden_layers", 2},
                                {"num_attention_heads", 4},       {"num_key_value_heads", 2}, {"head_dim", 16},
                                {"intermediate_size", 96},        {"vocab_size", 100},       {"max_position_embeddings", 64},
                                {"use_sliding_window", true}};
  EXPECT_NE(error_of(qwen3).find("use_sliding_window"), std::string::npos) << error_of(qwen3);
  nlohmann::json scaled = qwen3;
  scaled["use_sliding_window"] = false;
  scaled["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  EXPECT_NE(error_of(scaled).find("yarn"), std::string::npos) << error_of(scaled);
  scaled.erase("rope_scaling");
  EXPECT_EQ(error_of(scaled), "");
  scaled["num_key_value_heads"] = 3;
  EXPECT_NE(error_of(scaled).find("num_key_value_heads"), std::string::npos);
}

}  // namespace
}  // namespace il::models
