// LFM2's config.json (models/lfm2_config.h): the MLP width rule of transformers' Lfm2MLP, the
// layer kinds from layer_types or full_attn_idxs, the rotary theta's spellings, and refusals that
// name the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/lfm2_config.h"
#include "models/registry.h"

namespace il::models {
namespace {

nlohmann::json base() {
  return {{"model_type", "lfm2"},        {"hidden_size", 64},     {"num_hidden_layers", 4},
          {"num_attention_heads", 4},    {"num_key_value_heads", 2}, {"vocab_size", 100},
          {"intermediate_size", 200},    {"layer_types", {"conv", "full_attention", "conv", "full_attention"}}};
}

std::string error_of(const nlohmann::json& j) {
  try {
    (void)parse_lfm2_config(j, "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Lfm2Config, MlpWidthFollowsLfm2Mlp) {
  const double one = 1.0, mult = 1.25;
  // LFM2-350M / LFM2-ColBERT-350M: block_ff_dim 6656 → int(2 · 6656 / 3) = 4437 → ×1.0 → 4608.
  EXPECT_EQ(lfm2_intermediate(6656, true, &one, 256), 4608);
  EXPECT_EQ(lfm2_intermediate(200, true, &mult, 32), 192);  // 133 → 166 → 192
  EXPECT_EQ(lfm2_intermediate(200, true, nullptr, 32), 133);  // no multiplier: no rounding either
  EXPECT_EQ(lfm2_intermediate(200, false, &mult, 32), 200);
  // Defaults: auto-adjust on, multiplier 1.0, multiple of 256.
  EXPECT_EQ(parse_lfm2_config(base(), "c").intermediate, 256);
  nlohmann::json j = base();
  j["block_ff_dim"] = 6656;  // the original files' key wins over intermediate_size
  EXPECT_EQ(parse_lfm2_config(j, "c").intermediate, 4608);
  j["block_ffn_dim_multiplier"] = nullptr;
  EXPECT_EQ(parse_lfm2_config(j, "c").intermediate, 4437);
  j["block_auto_adjust_ff_dim"] = false;
  EXPECT_EQ(parse_lfm2_config(j, "c").intermediate, 6656);
}

TEST(Lfm2Config, LayerKindsFromLayerTypesOrFullAttnIdxs) {
  const Lfm2Config c = parse_lfm2_config(base(), "c");
  EXPECT_EQ(c.attention_layer, (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.conv_taps, 3);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
  EXPECT_FLOAT_EQ(c.rope_theta, 1e6f);
  nlohmann::json j = base();
  j.erase("layer_types");
  j["full_attn_idxs"] = {0, 3};
  EXPECT_EQ(parse_lfm2_config(j, "c").attention_layer, (std::vector<bool>{true, false, false, true}));
  j.erase("full_attn_idxs");  // neither: every layer attends, as Lfm2Config defaults
  EXPECT_EQ(parse_lfm2_config(j, "c").attention_layer, (std::vector<bool>(4, true)));
}

TEST(Lfm2Config, RopeThetaSpellings) {
  nlohmann::json j = base();
  j["theta"] = 5e5;
  EXPECT_FLOAT_EQ(parse_lfm2_config(j, "c").rope_theta, 5e5f);
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 2e5}};
  EXPECT_FLOAT_EQ(parse_lfm2_config(j, "c").rope_theta, 2e5f);
  j["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 3e5}}}, {"conv", nullptr}};
  EXPECT_FLOAT_EQ(parse_lfm2_config(j, "c").rope_theta, 3e5f);
}

TEST(Lfm2Config, RefusesWhatIsNotImplementedNamingTheField) {
  const auto refused = [](nlohmann::json j, const char* key, nlohmann::json value, const char* field) {
    j[key] = std::move(value);
    const std::string msg = error_of(j);
    EXPECT_NE(msg.find(field), std::string::npos) << key << ": " << msg;
    EXPECT_NE(msg.find("config.json"), std::string::npos) << msg;
  };
  refused(base(), "conv_bias", true, "conv_bias");
  refused(base(), "conv_L_cache", 17, "conv_L_cache");
  refused(base(), "layer_types", {"conv", "sliding_attention", "conv", "full_attention"}, "layer_types");
  refused(base(), "layer_types", {"conv", "full_attention"}, "layer_types");
  nlohmann::json idx = base();
  idx.erase("layer_types");
  refused(idx, "full_attn_idxs", {7}, "full_attn_idxs");
  refused(base(), "rope_parameters", {{"rope_type", "yarn"}, {"factor", 4.0}}, "yarn");
  refused(base(), "num_key_value_heads", 3, "num_key_value_heads");
  refused(base(), "architectures", {"Lfm2VlForConditionalGeneration"}, "architecture");
  EXPECT_EQ(find_architecture(base(), "c").name, "lfm2");
}

}  // namespace
}  // namespace il::models
