// The table of architectures: an unknown model_type is refused with every supported one listed,
// and each row's config check runs the parser its folder builder uses.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/modernbert_config.h"
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

// ModernBERT configs in both forms: the Hub's (global_attn_every_n_layers, global / local rope
// thetas) and transformers 5's (layer_types, rope_parameters per layer type); what is not
// implemented, or contradicts itself, is refused naming the field.
TEST(Registry, ModernBertReadsBothConfigForms) {
  EXPECT_EQ(find_architecture({{"model_type", "modernbert"}}, "c").name, "modernbert");
  const nlohmann::json hub = {{"model_type", "modernbert"}, {"hidden_size", 64},   {"num_hidden_layers", 4},
                              {"num_attention_heads", 4},   {"intermediate_size", 96}, {"vocab_size", 100},
                              {"global_attn_every_n_layers", 2}, {"local_attention", 16},
                              {"global_rope_theta", 1000.0}, {"local_rope_theta", 50.0}};
  EXPECT_EQ(error_of(hub), "");
  const ModernBertConfig a = parse_modernbert_config(hub, "c");
  EXPECT_EQ(a.sliding, (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ(a.window(0), 0u);
  EXPECT_EQ(a.window(1), 16u);
  EXPECT_EQ(a.rope_theta(0), 1000.0f);
  EXPECT_EQ(a.rope_theta(3), 50.0f);
  EXPECT_EQ(a.classifier_pooling, PoolingMode::kCls);  // transformers' default

  nlohmann::json v5 = hub;
  v5.erase("global_attn_every_n_layers");
  v5.erase("global_rope_theta");
  v5.erase("local_rope_theta");
  v5["layer_types"] = {"full_attention", "sliding_attention", "sliding_attention", "full_attention"};
  v5["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 2000.0}}},
                           {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 20.0}}}};
  v5["classifier_pooling"] = "mean";
  const ModernBertConfig b = parse_modernbert_config(v5, "c");
  EXPECT_EQ(b.sliding, (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(b.rope_theta(0), 2000.0f);
  EXPECT_EQ(b.rope_theta(1), 20.0f);
  EXPECT_EQ(b.classifier_pooling, PoolingMode::kMean);
  v5["sliding_window"] = 32;  // the half window, as transformers 5's property names it
  EXPECT_EQ(parse_modernbert_config(v5, "c").window(1), 64u);
  v5.erase("sliding_window");

  nlohmann::json bad = v5;
  bad["global_attn_every_n_layers"] = 2;  // says layer 2 is global, layer_types says sliding
  EXPECT_NE(error_of(bad).find("layer_types"), std::string::npos) << error_of(bad);
  bad = v5;
  bad["rope_parameters"]["sliding_attention"]["rope_type"] = "yarn";
  EXPECT_NE(error_of(bad).find("yarn"), std::string::npos) << error_of(bad);
  bad = v5;
  bad["layer_types"][1] = "chunked_attention";
  EXPECT_NE(error_of(bad).find("chunked_attention"), std::string::npos) << error_of(bad);
  bad = v5;
  bad["classifier_pooling"] = "max";
  EXPECT_NE(error_of(bad).find("classifier_pooling"), std::string::npos) << error_of(bad);
  bad = v5;
  bad["architectures"] = {"ModernBertForTokenClassification"};
  EXPECT_NE(error_of(bad).find("ModernBertForTokenClassification"), std::string::npos) << error_of(bad);
  bad = v5;
  bad["hidden_size"] = 66;
  EXPECT_NE(error_of(bad).find("num_attention_heads"), std::string::npos) << error_of(bad);
}

// nomic-bert's GPT2-style field names; each feature it does not implement is refused naming the
// field, and the release's values pass.
TEST(Registry, NomicBertRefusesWhatItDoesNotImplementNamingTheField) {
  EXPECT_EQ(find_architecture({{"model_type", "nomic_bert"}}, "c").name, "nomic-bert");
  const nlohmann::json base = {{"model_type", "nomic_bert"},      {"n_embd", 64},          {"n_layer", 2},
                               {"n_head", 4},                     {"n_inner", 96},         {"vocab_size", 100},
                               {"activation_function", "swiglu"}, {"rotary_emb_fraction", 1.0},
                               {"rotary_emb_base", 1000},         {"rotary_scaling_factor", nullptr},
                               {"prenorm", false},                {"causal", false}};
  EXPECT_EQ(error_of(base), "");
  const std::vector<std::pair<std::string, nlohmann::json>> refused = {
      {"prenorm", true},
      {"causal", true},
      {"rotary_scaling_factor", 2.0},
      {"rotary_emb_fraction", 0.0},
      {"rotary_emb_fraction", 0.3},  // 16 · 0.3 is not a whole even number of columns
      {"activation_function", "glu"},
      {"num_heads_kv", 2},
      {"rotary_head_dim", true},
      {"use_rms_norm", true},
  };
  for (const auto& [field, value] : refused) {
    nlohmann::json c = base;
    c[field] = value;
    const std::string msg = error_of(c);
    EXPECT_NE(msg.find("config.json"), std::string::npos) << field << ": " << msg;
    EXPECT_NE(msg.find("\"" + field + "\""), std::string::npos) << field << ": " << msg;
  }
  nlohmann::json partial = base;
  partial["rotary_emb_fraction"] = 0.5;
  partial["rotary_emb_interleaved"] = true;
  partial["activation_function"] = "gelu_new";
  EXPECT_EQ(error_of(partial), "");
  nlohmann::json missing = base;
  missing.erase("rotary_emb_fraction");  // the class default 0 means learned positions
  EXPECT_NE(error_of(missing).find("rotary_emb_fraction"), std::string::npos);

  // transformers' own NomicBertConfig (hidden_size, ..., rope_parameters).
  const nlohmann::json hf = {{"model_type", "nomic_bert"},    {"hidden_size", 64},       {"num_hidden_layers", 2},
                             {"num_attention_heads", 4},      {"intermediate_size", 96}, {"vocab_size", 100},
                             {"hidden_act", "silu"},
                             {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 1000.0}}}};
  EXPECT_EQ(error_of(hf), "");
  nlohmann::json no_rope = hf;
  no_rope.erase("rope_parameters");
  EXPECT_NE(error_of(no_rope).find("rope_parameters"), std::string::npos);
  nlohmann::json yarn = hf;
  yarn["rope_parameters"]["rope_type"] = "yarn";
  EXPECT_NE(error_of(yarn).find("yarn"), std::string::npos);
  nlohmann::json partial_hf = hf;
  partial_hf["rotary_emb_fraction"] = 0.5;
  EXPECT_NE(error_of(partial_hf).find("rotary_emb_fraction"), std::string::npos);
}

}  // namespace
}  // namespace il::models
