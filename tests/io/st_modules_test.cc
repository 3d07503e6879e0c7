#include "io/st_modules.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "io_test_util.h"

namespace il::io {
namespace {

using nlohmann::json;
using test::error_of;
using test::TempDir;
using test::write_file;
using test::write_json;

json module(int idx, const std::string& path, const std::string& type) {
  return {{"idx", idx}, {"name", std::to_string(idx)}, {"path", path}, {"type", type}};
}

// 1_Pooling/config.json as sentence-transformers writes it: every key present.
json pooling(const std::string& mode, bool include_prompt = true) {
  return {{"word_embedding_dimension", 384},
          {"pooling_mode_cls_token", mode == "cls"},
          {"pooling_mode_mean_tokens", mode == "mean"},
          {"pooling_mode_max_tokens", mode == "max"},
          {"pooling_mode_mean_sqrt_len_tokens", mode == "sqrt"},
          {"pooling_mode_weightedmean_tokens", mode == "weighted"},
          {"pooling_mode_lasttoken", mode == "last"},
          {"include_prompt", include_prompt}};
}

// An all-MiniLM-L6-v2 style folder: Transformer, mean Pooling, Normalize.
void write_minilm(const TempDir& dir, const std::string& mode = "mean") {
  write_json(dir / "modules.json", {module(0, "", "sentence_transformers.models.Transformer"),
                                    module(1, "1_Pooling", "sentence_transformers.models.Pooling"),
                                    module(2, "2_Normalize", "sentence_transformers.models.Normalize")});
  write_json(dir / "1_Pooling/config.json", pooling(mode));
  write_json(dir / "sentence_bert_config.json", {{"max_seq_length", 256}, {"do_lower_case", false}});
  write_json(dir / "config_sentence_transformers.json", {{"__version__", {{"sentence_transformers", "2.0.0"}}},
                                                         {"prompts", json::object()},
                                                         {"default_prompt_name", nullptr},
                                                         {"similarity_fn_name", "cosine"}});
}


void expect_refused(const TempDir& dir, const std::vector<std::string>& parts) {
  const std::string msg = error_of([&] { load_sentence_transformer_info(dir.path()); });
  for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in: " << msg;
}

TEST(StModules, PlainTransformersFolder) {
  TempDir dir;
  write_file(dir / "config.json", "{}");
  const auto info = load_sentence_transformer_info(dir.path());
  EXPECT_FALSE(info.present);
  EXPECT_FALSE(info.pooling.has_value());
  EXPECT_TRUE(info.include_prompt);
  EXPECT_FALSE(info.normalize);
  EXPECT_FALSE(info.dense.has_value());
  EXPECT_TRUE(info.prompts.empty());
  EXPECT_EQ(info.default_prompt_name, "");
  EXPECT_EQ(info.max_seq_length, 0);
}

TEST(StModules, MeanNormalize) {
  TempDir dir;
  write_minilm(dir);
  const auto info = load_sentence_transformer_info(dir.path());
  EXPECT_TRUE(info.present);
  ASSERT_TRUE(info.pooling.has_value());
  EXPECT_EQ(*info.pooling, PoolingMode::kMean);
  EXPECT_TRUE(info.normalize);
  EXPECT_TRUE(info.include_prompt);
  EXPECT_FALSE(info.dense.has_value());
  EXPECT_EQ(info.max_seq_length, 256);
  EXPECT_TRUE(info.prompts.empty());
  EXPECT_EQ(info.default_prompt_name, "");
}

TEST(StModules, ClsAndLastTokenAndV5TypeNames) {
  TempDir dir;
  write_minilm(dir, "cls");
  EXPECT_EQ(*load_sentence_transformer_info(dir.path()).pooling, PoolingMode::kCls);

  TempDir qwen;
  write_json(qwen / "modules.json",
             {module(0, "", "sentence_transformers.base.modules.transformer.Transformer"),
              module(1, "1_Pooling", "sentence_transformers.sentence_transformer.modules.pooling.Pooling"),
              module(2, "2_Normalize", "sentence_transformers.sentence_transformer.modules.normalize.Normalize")});
  write_json(qwen / "1_Pooling/config.json", pooling("last", false));
  const auto info = load_sentence_transformer_info(qwen.path());
  EXPECT_EQ(*info.pooling, PoolingMode::kLastToken);
  EXPECT_FALSE(info.include_prompt);
  EXPECT_TRUE(info.normalize);
  EXPECT_EQ(info.max_seq_length, 0);

  // `pooling_mode` as a string overrides the flags, as in Pooling(**config).
  write_json(qwen / "1_Pooling/config.json", {{"word_embedding_dimension", 8}, {"pooling_mode", "cls"}});
  EXPECT_EQ(*load_sentence_transformer_info(qwen.path()).pooling, PoolingMode::kCls);
}

TEST(StModules, RefusedPoolingModes) {
  const std::vector<std::pair<std::string, std::string>> cases = {{"max", "pooling_mode_max_tokens"},
                                                                  {"sqrt", "pooling_mode_mean_sqrt_len_tokens"},
                                                                  {"weighted", "pooling_mode_weightedmean_tokens"}};
  for (const auto& [mode, key] : cases) {
    TempDir dir;
    write_minilm(dir, mode);
    expect_refused(dir, {(dir / "1_Pooling/config.json").string(), key, "not supported"});
  }
  TempDir dir;
  write_minilm(dir);
  json p = pooling("mean");
  p["pooling_mode_cls_token"] = true;
  write_json(dir / "1_Pooling/config.json", p);
  expect_refused(dir, {"1_Pooling", "pooling_mode_cls_token", "pooling_mode_mean_tokens"});

  // An absent mean flag defaults to true, so lasttoken alone in the file means mean + lasttoken.
  write_json(dir / "1_Pooling/config.json", {{"pooling_mode_lasttoken", true}});
  expect_refused(dir, {"pooling_mode_lasttoken", "pooling_mode_mean_tokens"});

  write_json(dir / "1_Pooling/config.json", pooling("none"));
  expect_refused(dir, {"1_Pooling", "no pooling mode"});
  write_json(dir / "1_Pooling/config.json", {{"pooling_mode", "median"}});
  expect_refused(dir, {"1_Pooling", "median"});
  write_json(dir / "1_Pooling/config.json", {{"pooling_mode_mean_tokens", "yes"}});
  expect_refused(dir, {"1_Pooling", "pooling_mode_mean_tokens"});
  std::filesystem::remove(dir / "1_Pooling/config.json");
  expect_refused(dir, {(dir / "1_Pooling/config.json").string()});
}

TEST(StModules, DenseModule) {
  TempDir dir;
  write_json(dir / "modules.json", {module(0, "", "sentence_transformers.models.Transformer"),
                                    module(1, "1_Pooling", "sentence_transformers.models.Pooling"),
                                    module(2, "2_Dense", "sentence_transformers.models.Dense"),
                                    module(3, "3_Normalize", "sentence_transformers.models.Normalize")});
  write_json(dir / "1_Pooling/config.json", pooling("cls"));
  write_json(dir / "2_Dense/config.json", {{"in_features", 768},
                                           {"out_features", 256},
                                           {"bias", true},
                                           {"activation_function", "torch.nn.modules.activation.Tanh"}});
  auto info = load_sentence_transformer_info(dir.path());
  ASSERT_TRUE(info.dense.has_value());
  EXPECT_EQ(info.dense->dir, dir / "2_Dense");
  EXPECT_EQ(info.dense->in_features, 768);
  EXPECT_EQ(info.dense->out_features, 256);
  EXPECT_TRUE(info.dense->bias);
  EXPECT_EQ(info.dense->act, Activation::kTanh);
  EXPECT_TRUE(info.normalize);

  const std::vector<std::pair<std::string, Activation>> acts = {
      {"torch.nn.modules.linear.Identity", Activation::kNone},
      {"torch.nn.modules.activation.ReLU", Activation::kRelu},
      {"torch.nn.modules.activation.GELU", Activation::kGeluErf},
      {"torch.nn.modules.activation.SiLU", Activation::kSilu}};
  for (const auto& [name, act] : acts) {
    write_json(dir / "2_Dense/config.json",
               {{"in_features", 768}, {"out_features", 768}, {"bias", false}, {"activation_function", name}});
    info = load_sentence_transformer_info(dir.path());
    EXPECT_EQ(info.dense->act, act) << name;
    EXPECT_FALSE(info.dense->bias);
  }

  write_json(
      dir / "2_Dense/config.json",
      {{"in_features", 768}, {"out_features", 768}, {"activation_function", "torch.nn.modules.activation.Sigmoid"}});
  expect_refused(dir, {(dir / "2_Dense/config.json").string(), "Sigmoid"});
  write_json(dir / "2_Dense/config.json", {{"out_features", 768}});
  expect_refused(dir, {"2_Dense", "\"in_features\""});
  write_json(dir / "2_Dense/config.json",
             {{"in_features", 768}, {"out_features", 768}, {"module_input_name", "token_embeddings"}});
  expect_refused(dir, {"2_Dense", "module_input_name"});
}

TEST(StModules, DenseOrderAndCountRefused) {
  TempDir dir;
  write_json(dir / "modules.json", {module(0, "", "sentence_transformers.models.Transformer"),
                                    module(1, "1_Pooling", "sentence_transformers.models.Pooling"),
                                    module(2, "2_Normalize", "sentence_transformers.models.Normalize"),
                                    module(3, "3_Dense", "sentence_transformers.models.Dense")});
  write_json(dir / "1_Pooling/config.json", pooling("mean"));
  write_json(dir / "3_Dense/config.json", {{"in_features", 8}, {"out_features", 4}});
  expect_refused(dir, {"modules.json", "Normalize"});

  write_json(dir / "modules.json", {module(0, "", "sentence_transformers.models.Transformer"),
                                    module(1, "1_Pooling", "sentence_transformers.models.Pooling"),
                                    module(2, "3_Dense", "sentence_transformers.models.Dense"),
                                    module(3, "3_Dense", "sentence_transformers.models.Dense")});
  expect_refused(dir, {"modules.json", "Dense"});
}

TEST(StModules, PylateColbertDense) {
  TempDir dir;
  write_json(dir / "modules.json", {module(0, "", "sentence_transformers.models.Transformer"),
                                    module(1, "1_Dense", "pylate.models.Dense.Dense")});
  write_json(dir / "1_Dense/config.json", {{"in_features", 768}, {"out_features", 128}, {"bias", false}});
  const auto info = load_sentence_transformer_info(dir.path());
  EXPECT_TRUE(info.present);
  EXPECT_FALSE(info.pooling.has_value());
  ASSERT_TRUE(info.dense.has_value());
  EXPECT_EQ(info.dense->act, Activation::kNone);  // pylate's default
  EXPECT_EQ(info.dense->out_features, 128);
  EXPECT_FALSE(info.dense->bias);
}

TEST(StModules, Prompts) {
  TempDir dir;
  write_minilm(dir);
  write_json(dir / "config_sentence_transformers.json",
             {{"prompts", {{"query", "query: "}, {"passage", "passage: "}}}, {"default_prompt_name", "query"}});
  auto info = load_sentence_transformer_info(dir.path());
  EXPECT_EQ(info.prompts.size(), 2u);
  EXPECT_EQ(info.prompts.at("query"), "query: ");
  EXPECT_EQ(info.prompts.at("passage"), "passage: ");
  EXPECT_EQ(info.default_prompt_name, "query");

  write_json(dir / "config_sentence_transformers.json", {{"prompts", {{"query", 3}}}});
  expect_refused(dir, {"config_sentence_transformers.json", "\"query\""});
  write_json(dir / "config_sentence_transformers.json", {{"prompts", {{"query", "q: "}}}, {"default_prompt_name", 5}});
  expect_refused(dir, {"config_sentence_transformers.json", "default_prompt_name"});
  write_json(dir / "config_sentence_transformers.json",
             {{"prompts", {{"query", "q: "}}}, {"default_prompt_name", "document"}});
  expect_refused(dir, {"config_sentence_transformers.json", "document"});
}

TEST(StModules, MalformedModulesJson) {
  TempDir dir;
  write_minilm(dir);
  write_file(dir / "modules.json", "[{");
  expect_refused(dir, {"modules.json", "not valid JSON"});
  write_json(dir / "modules.json", {{"type", "x"}});
  expect_refused(dir, {"modules.json", "array"});
  write_json(dir / "modules.json", json::array({module(0, "", "sentence_transformers.models.LSTM")}));
  expect_refused(dir, {"modules.json", "sentence_transformers.models.LSTM", "not supported"});
  write_json(dir / "modules.json", json::array({{{"idx", 0}, {"path", ""}}}));
  expect_refused(dir, {"modules.json", "\"type\""});
  write_json(dir / "modules.json", json::array({module(0, "../elsewhere", "sentence_transformers.models.Pooling")}));
  expect_refused(dir, {"modules.json", "../elsewhere"});
  write_minilm(dir);
  write_json(dir / "sentence_bert_config.json", {{"max_seq_length", "long"}});
  expect_refused(dir, {"sentence_bert_config.json", "max_seq_length"});
}

}  // namespace
}  // namespace il::io
