#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/hf_config.h"
#include "models/bert_config.h"
#include "io_test_util.h"

namespace il::io {
namespace {

using models::BertConfig;
using models::BertFlavor;
using models::load_bert_config;
using models::parse_bert_config;

using nlohmann::json;
using test::error_of;
using test::TempDir;
using test::write_file;
using test::write_json;

// bert-base-uncased's config.json as published.
json bert_base() {
  return json::parse(R"({
    "architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1, "gradient_checkpointing": false,
    "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02,
    "intermediate_size": 3072, "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert",
    "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 0,
    "position_embedding_type": "absolute", "transformers_version": "4.6.0.dev0", "type_vocab_size": 2,
    "use_cache": true, "vocab_size": 30522})");
}

// bge-reranker-v2-m3 style XLM-R cross-encoder config.
json xlmr_reranker() {
  return json::parse(R"({
    "architectures": ["XLMRobertaForSequenceClassification"], "attention_probs_dropout_prob": 0.1,
    "bos_token_id": 0, "classifier_dropout": null, "eos_token_id": 2, "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1, "hidden_size": 1024, "id2label": {"0": "LABEL_0"}, "initializer_range": 0.02,
    "intermediate_size": 4096, "label2id": {"LABEL_0": 0}, "layer_norm_eps": 1e-05,
    "max_position_embeddings": 8194, "model_type": "xlm-roberta", "num_attention_heads": 16,
    "num_hidden_layers": 24, "output_past": true, "pad_token_id": 1, "position_embedding_type": "absolute",
    "torch_dtype": "float32", "transformers_version": "4.38.1", "type_vocab_size": 1, "use_cache": true,
    "vocab_size": 250002})");
}


void expect_refused(const json& j, const std::vector<std::string>& parts) {
  const std::string msg = error_of([&] { parse_bert_config(j, "my/config.json"); });
  EXPECT_NE(msg.find("my/config.json"), std::string::npos) << msg;
  for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in: " << msg;
}

TEST(HfConfig, Bert) {
  const BertConfig c = parse_bert_config(bert_base(), "config.json");
  EXPECT_EQ(c.flavor, BertFlavor::kBert);
  EXPECT_EQ(c.model_type, "bert");
  EXPECT_EQ(c.architectures, std::vector<std::string>{"BertForMaskedLM"});
  EXPECT_EQ(c.hidden, 768);
  EXPECT_EQ(c.layers, 12);
  EXPECT_EQ(c.heads, 12);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.intermediate, 3072);
  EXPECT_EQ(c.vocab, 30522);
  EXPECT_EQ(c.type_vocab, 2);
  EXPECT_EQ(c.max_positions, 512);
  EXPECT_EQ(c.position_offset, 0);
  EXPECT_EQ(c.pad_token_id, 0);
  EXPECT_FLOAT_EQ(c.layer_norm_eps, 1e-12f);
  EXPECT_EQ(c.act, Activation::kGeluErf);
  EXPECT_FALSE(c.is_cross_encoder);
  EXPECT_EQ(c.num_labels, 1);
  EXPECT_FALSE(c.random_weights);
  EXPECT_EQ(c.max_tokens_per_sequence(), 512);
}

TEST(HfConfig, XlmRobertaCrossEncoder) {
  const BertConfig c = parse_bert_config(xlmr_reranker(), "config.json");
  EXPECT_EQ(c.flavor, BertFlavor::kXlmRoberta);
  EXPECT_EQ(c.pad_token_id, 1);
  EXPECT_EQ(c.position_offset, 2);
  EXPECT_EQ(c.max_tokens_per_sequence(), 8192);
  EXPECT_EQ(c.type_vocab, 1);
  EXPECT_FLOAT_EQ(c.layer_norm_eps, 1e-5f);
  EXPECT_TRUE(c.is_cross_encoder);
  EXPECT_EQ(c.num_labels, 1);  // from id2label
  EXPECT_EQ(c.head_dim, 64);
}

TEST(HfConfig, RobertaDefaultsAndLabels) {
  json j = xlmr_reranker();
  j["model_type"] = "roberta";
  j["architectures"] = {"RobertaModel"};
  for (const char* k : {"pad_token_id", "type_vocab_size", "layer_norm_eps", "hidden_act", "id2label"}) j.erase(k);
  BertConfig c = parse_bert_config(j, "config.json");
  EXPECT_EQ(c.flavor, BertFlavor::kXlmRoberta);
  EXPECT_EQ(c.pad_token_id, 1);
  EXPECT_EQ(c.position_offset, 2);
  EXPECT_EQ(c.type_vocab, 1);
  EXPECT_FLOAT_EQ(c.layer_norm_eps, 1e-12f);  // the class default; real files say 1e-5
  EXPECT_EQ(c.act, Activation::kGeluErf);
  EXPECT_FALSE(c.is_cross_encoder);
  EXPECT_EQ(c.num_labels, 1);

  j["architectures"] = {"RobertaForSequenceClassification"};
  j["id2label"] = {{"0", "neg"}, {"1", "pos"}};
  c = parse_bert_config(j, "config.json");
  EXPECT_TRUE(c.is_cross_encoder);
  EXPECT_EQ(c.num_labels, 2);
  j["num_labels"] = 3;  // an explicit num_labels wins
  EXPECT_EQ(parse_bert_config(j, "config.json").num_labels, 3);

  j["pad_token_id"] = 0;
  j["max_position_embeddings"] = 130;
  c = parse_bert_config(j, "config.json");
  EXPECT_EQ(c.position_offset, 1);
  EXPECT_EQ(c.max_tokens_per_sequence(), 129);

  j["inferencelayer_random_weights"] = true;
  EXPECT_TRUE(parse_bert_config(j, "config.json").random_weights);
}

TEST(HfConfig, Refusals) {
  json j = bert_base();
  j["model_type"] = "deberta-v2";
  expect_refused(j, {"deberta-v2", "bert, roberta, xlm-roberta"});

  j = bert_base();
  j["hidden_act"] = "mish";
  expect_refused(j, {"mish", "gelu_pytorch_tanh", "swish", "quick_gelu"});

  for (const char* field : {"model_type", "hidden_size", "num_hidden_layers", "num_attention_heads",
                            "intermediate_size", "vocab_size", "max_position_embeddings"}) {
    j = bert_base();
    j.erase(field);
    expect_refused(j, {std::string("\"") + field + "\"", "missing"});
    j = bert_base();
    j[field] = json::array();
    expect_refused(j, {std::string("\"") + field + "\""});
  }

  j = bert_base();
  j["hidden_size"] = "768";
  expect_refused(j, {"\"hidden_size\"", "integer"});
  j = bert_base();
  j["hidden_size"] = 768.5;
  expect_refused(j, {"\"hidden_size\""});
  j = bert_base();
  j["hidden_size"] = -768;
  expect_refused(j, {"\"hidden_size\""});
  j = bert_base();
  j["num_attention_heads"] = 7;
  expect_refused(j, {"\"num_attention_heads\"", "divide"});
  j = bert_base();
  j["position_embedding_type"] = "relative_key";
  expect_refused(j, {"\"position_embedding_type\"", "relative_key"});
  j = bert_base();
  j["layer_norm_eps"] = "1e-12";
  expect_refused(j, {"\"layer_norm_eps\""});
  j = bert_base();
  j["layer_norm_eps"] = 0;
  expect_refused(j, {"\"layer_norm_eps\""});
  j = bert_base();
  j["layer_norm_eps"] = 1e300;
  expect_refused(j, {"\"layer_norm_eps\""});
  j = bert_base();
  j["architectures"] = "BertModel";
  expect_refused(j, {"\"architectures\""});
  j = bert_base();
  j["inferencelayer_random_weights"] = 1;
  expect_refused(j, {"\"inferencelayer_random_weights\""});
  j = bert_base();
  j["num_labels"] = 0;
  expect_refused(j, {"\"num_labels\""});
  j = bert_base();
  j["vocab_size"] = 99999999999999999ULL;
  expect_refused(j, {"\"vocab_size\""});
  j = xlmr_reranker();
  j["max_position_embeddings"] = 2;
  expect_refused(j, {"\"max_position_embeddings\""});
  expect_refused(json::array(), {"object"});
}

TEST(HfConfig, Id2Label) {
  json j = xlmr_reranker();
  j["id2label"] = {{"0", "contradiction"}, {"1", "entailment"}, {"2", "neutral"}};
  BertConfig c = parse_bert_config(j, "config.json");
  EXPECT_EQ(c.num_labels, 3);
  const std::map<int, std::string> want{{0, "contradiction"}, {1, "entailment"}, {2, "neutral"}};
  EXPECT_EQ(c.id2label, want);

  // num_labels wins over the size of id2label; the outputs it does not name stay unnamed here.
  j["num_labels"] = 4;
  c = parse_bert_config(j, "config.json");
  EXPECT_EQ(c.num_labels, 4);
  EXPECT_EQ(c.id2label, want);
  j["num_labels"] = 2;
  expect_refused(j, {"\"id2label\"", "label 2", "2 label(s)"});
  j.erase("num_labels");

  // Sparse: two entries are two labels, so index 5 is out of range.
  j["id2label"] = {{"0", "a"}, {"5", "b"}};
  expect_refused(j, {"\"id2label\"", "label 5"});
  for (const char* key : {"x", "-1", "1.0", " 1", "", "99999999999999999999"}) {
    j["id2label"] = {{"0", "a"}, {key, "b"}};
    expect_refused(j, {"\"id2label\"", "not a label index"});
  }
  j["id2label"] = {{"0", "a"}, {"00", "b"}};
  expect_refused(j, {"\"id2label\"", "label 0 twice"});
  j["id2label"] = {{"0", "a"}, {"1", 7}};
  expect_refused(j, {"\"id2label\"", "label 1", "string"});
  j["id2label"] = json::array({"a", "b"});
  expect_refused(j, {"\"id2label\"", "object"});

  // An embedding model's id2label does not matter to it, so it is not checked beyond its type.
  j = bert_base();
  j["id2label"] = {{"0", "a"}, {"x", 1}};
  c = parse_bert_config(j, "config.json");
  EXPECT_FALSE(c.is_cross_encoder);
  EXPECT_TRUE(c.id2label.empty());
}

TEST(HfConfig, Activations) {
  EXPECT_EQ(parse_activation("gelu", "f"), Activation::kGeluErf);
  EXPECT_EQ(parse_activation("gelu_python", "f"), Activation::kGeluErf);
  EXPECT_EQ(parse_activation("gelu_new", "f"), Activation::kGeluTanh);
  EXPECT_EQ(parse_activation("gelu_fast", "f"), Activation::kGeluTanh);
  EXPECT_EQ(parse_activation("gelu_pytorch_tanh", "f"), Activation::kGeluTanh);
  EXPECT_EQ(parse_activation("silu", "f"), Activation::kSilu);
  EXPECT_EQ(parse_activation("swish", "f"), Activation::kSilu);
  EXPECT_EQ(parse_activation("relu", "f"), Activation::kRelu);
  EXPECT_EQ(parse_activation("tanh", "f"), Activation::kTanh);
  EXPECT_EQ(parse_activation("quick_gelu", "f"), Activation::kQuickGelu);
  for (const char* bad : {"mish", "gelu_10", "GELU", ""}) {
    const std::string msg = error_of([&] { parse_activation(bad, "cfg.json"); });
    EXPECT_NE(msg.find("cfg.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("supported"), std::string::npos) << msg;
  }
}

TEST(HfConfig, LoadFromFolder) {
  TempDir dir;
  std::string msg = error_of([&] { load_bert_config(dir.path()); });
  EXPECT_NE(msg.find("config.json"), std::string::npos) << msg;

  write_file(dir / "config.json", "{\"model_type\": \"bert\",");
  msg = error_of([&] { load_bert_config(dir.path()); });
  EXPECT_NE(msg.find((dir / "config.json").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;

  write_json(dir / "config.json", bert_base());
  EXPECT_EQ(load_bert_config(dir.path()).hidden, 768);

  json j = bert_base();
  j.erase("vocab_size");
  write_json(dir / "config.json", j);
  msg = error_of([&] { load_bert_config(dir.path()); });
  EXPECT_NE(msg.find((dir / "config.json").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"vocab_size\""), std::string::npos) << msg;
}

}  // namespace
}  // namespace il::io
