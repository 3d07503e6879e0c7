// A classifier's outputs carry the names of its config.json id2label in /predict, /info and
// `inferencelayer info`, and "LABEL_i" only where the config names none. The three-label fixture
// says LABEL_0..2 itself, so these tests serve a copy of it with other names written in.
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server_test_util.h"

namespace il::server_test {
namespace {

using cli_test::cli_args;
using cli_test::run_cli;
using cli_test::ScratchDir;

// tests/fixtures/xlmr-ce2 copied under `dir`, with config.json changed by `edit`.
template <typename Edit>
std::string classifier_copy(const ScratchDir& dir, Edit edit) {
  const std::filesystem::path to = dir.path() / "classifier";
  std::filesystem::copy(cli_test::fixture_dir("xlmr-ce2"), to, std::filesystem::copy_options::recursive);
  json config;
  {
    std::ifstream in(to / "config.json");
    config = json::parse(in);
  }
  edit(config);
  std::ofstream(to / "config.json") << config.dump(2);
  return to.string();
}

// /predict's answer (best first) as label → score.
std::map<std::string, float> scores_by_label(const json& answer) {
  std::map<std::string, float> out;
  for (const json& s : answer) out[s.at("label").get<std::string>()] = s.at("score").get<float>();
  return out;
}

const json kPair = json::array({"what is a reranker", "a model that scores a query against a text"});

TEST(ClassifierLabels, PredictInfoAndCliUseId2Label) {
  ScratchDir dir;
  const std::vector<std::string> names = {"contradiction", "entailment", "neutral"};
  const std::string model = classifier_copy(dir, [&](json& c) {
    c["id2label"] = {{"0", names[0]}, {"1", names[1]}, {"2", names[2]}};
    c["label2id"] = {{names[0], 0}, {names[1], 1}, {names[2], 2}};
  });
  ServerProcess named("", {"--model", model});
  ServerProcess plain("xlmr-ce2");  // the same weights, labels as the fixture names them
  ASSERT_TRUE(named.started());
  ASSERT_TRUE(plain.started());
  auto cn = named.client();
  auto cp = plain.client();

  const json body = {{"inputs", kPair}, {"raw_scores", true}};
  const auto by_name = scores_by_label(body_of(post(cn, "/predict", body)));
  const auto by_index = scores_by_label(body_of(post(cp, "/predict", body)));
  ASSERT_EQ(by_name.size(), 3u);
  ASSERT_EQ(by_index.size(), 3u);
  for (std::size_t i = 0; i < names.size(); ++i) {
    ASSERT_TRUE(by_name.count(names[i])) << names[i];
    EXPECT_EQ(by_name.at(names[i]), by_index.at("LABEL_" + std::to_string(i))) << names[i];
  }

  const json classifier = body_of(cn.Get("/info"))["model_type"]["classifier"];
  EXPECT_EQ(classifier["id2label"], json({{"0", names[0]}, {"1", names[1]}, {"2", names[2]}})) << classifier.dump();
  EXPECT_EQ(classifier["label2id"], json({{names[0], 0}, {names[1], 1}, {names[2], 2}})) << classifier.dump();

  const auto info = run_cli(cli_args({"info", "--model", model, "--json"}));
  ASSERT_EQ(info.status, 0) << info.err;
  EXPECT_EQ(json::parse(info.out)["labels"], json(names)) << info.out;
  const auto table = run_cli(cli_args({"info", "--model", model}));
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find(R"(0 "contradiction", 1 "entailment", 2 "neutral")"), std::string::npos) << table.out;

  EXPECT_EQ(named.terminate(), 0);
  EXPECT_EQ(plain.terminate(), 0);
}

TEST(ClassifierLabels, UnnamedLabelsFallBackToLabelIndex) {
  ScratchDir dir;
  const std::string model = classifier_copy(dir, [](json& c) {
    c["num_labels"] = 3;
    c["id2label"] = {{"1", "entailment"}};
    c.erase("label2id");
  });
  ServerProcess server("", {"--model", model});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const auto scores = scores_by_label(body_of(post(c, "/predict", {{"inputs", kPair}})));
  EXPECT_EQ(scores.size(), 3u);
  for (const char* label : {"LABEL_0", "entailment", "LABEL_2"}) EXPECT_TRUE(scores.count(label)) << label;
  const json id2label = body_of(c.Get("/info"))["model_type"]["classifier"]["id2label"];
  EXPECT_EQ(id2label, json({{"0", "LABEL_0"}, {"1", "entailment"}, {"2", "LABEL_2"}}));
  EXPECT_EQ(server.terminate(), 0);
}

TEST(ClassifierLabels, MalformedId2LabelIsRefusedAtStart) {
  ScratchDir dir;
  const std::string model = classifier_copy(dir, [](json& c) { c["id2label"] = {{"0", "a"}, {"one", "b"}, {"2", "c"}}; });
  // serve and info both refuse the folder with a message naming the field, and exit non-zero.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"serve", "--model", model, "--port", "0"}, {"info", "--model", model}}) {
    // `timeout` turns a server that wrongly starts into a failure instead of a hung test.
    const auto r = run_cli(cli_args(args), "", "timeout 60");
    EXPECT_NE(r.status, 0) << args[0];
    EXPECT_NE(r.status, -1) << args[0] << ": killed by a signal";
    EXPECT_NE(r.err.find("\"id2label\""), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("\"one\""), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace il::server_test
