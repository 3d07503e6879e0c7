// /tokenize and /decode against `inferencelayer tokenize`, /info, /health and /metrics.
#include <gtest/gtest.h>

#include "server/metrics.h"
#include "server_test_util.h"

namespace il::server_test {
namespace {

class InfoTokens : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess("bert-mean", {"--served-model-name", "my-model", "--max-batch-tokens", "512",
                                              "--max-batch-requests", "8", "--auto-truncate", "--device", "cpu"});
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->terminate(), 0);
    delete server_;
  }
  void SetUp() override { ASSERT_TRUE(server_->started()); }
  static ServerProcess* server_;
};
ServerProcess* InfoTokens::server_ = nullptr;

TEST_F(InfoTokens, TokenizeEqualsTheCli) {
  auto c = server_->client();
  const std::string text = "hello world, good morning";
  const json j = body_of(post(c, "/tokenize", {{"inputs", text}}));
  ASSERT_TRUE(j.is_array() && j.size() == 1) << j.dump();
  const auto r = cli_test::run_cli(cli_test::cli_args({"tokenize", "--model", fixture_path("bert-mean"), text}));
  ASSERT_EQ(r.status, 0) << r.err;
  const json want = cli_test::parse_line(r.lines().at(0));
  ASSERT_EQ(j[0].size(), want["ids"].size());
  for (std::size_t i = 0; i < j[0].size(); ++i) {
    const json& tok = j[0][i];
    EXPECT_EQ(tok["id"], want["ids"][i]);
    const bool special = want["offsets"][i][0] == 0 && want["offsets"][i][1] == 0;
    EXPECT_EQ(tok["special"], special) << i;
    if (!special) {
      EXPECT_EQ(tok["start"], want["offsets"][i][0]);
      EXPECT_EQ(tok["stop"], want["offsets"][i][1]);
      const auto s = tok["start"].get<std::size_t>(), e = tok["stop"].get<std::size_t>();
      EXPECT_EQ(tok["text"], text.substr(s, e - s));
    } else {
      EXPECT_TRUE(tok["start"].is_null());
    }
  }
  const json bare = body_of(post(c, "/tokenize", {{"inputs", {text, "a"}}, {"add_special_tokens", false}}));
  ASSERT_EQ(bare.size(), 2u);
  EXPECT_EQ(bare[0].size(), j[0].size() - 2);
}

TEST_F(InfoTokens, DecodeInvertsTokenize) {
  auto c = server_->client();
  const json j = body_of(post(c, "/tokenize", {{"inputs", "hello world"}}));
  std::vector<int> ids;
  for (const json& t : j[0]) ids.push_back(t["id"].get<int>());
  const json d = body_of(post(c, "/decode", {{"ids", ids}}));
  ASSERT_TRUE(d.is_array() && d.size() == 1) << d.dump();
  EXPECT_EQ(d[0], "hello world");
  const json both = body_of(post(c, "/decode", {{"ids", {ids, ids}}, {"skip_special_tokens", false}}));
  ASSERT_EQ(both.size(), 2u);
  EXPECT_NE(both[0].get<std::string>().find("[CLS]"), std::string::npos) << both.dump();
  expect_error(post(c, "/decode", {{"ids", "hello"}}), 422, "Validation");
}

TEST_F(InfoTokens, InfoReportsTheModelAndTheOptions) {
  auto c = server_->client();
  const json j = body_of(c.Get("/info"));
  EXPECT_EQ(j["model_id"], "my-model");
  EXPECT_EQ(j["model_type"]["embedding"]["pooling"], "mean");
  EXPECT_EQ(j["max_input_length"], 64);
  EXPECT_EQ(j["max_batch_tokens"], 512);
  EXPECT_EQ(j["max_batch_requests"], 8);
  EXPECT_EQ(j["auto_truncate"], true);
  EXPECT_EQ(j["tokenization_workers"], 2);
  EXPECT_EQ(j["lanes"], 1);  // the CPU runs one pass at a time
  EXPECT_EQ(j["max_client_batch_size"], 32);
  // --auto-truncate: an over-long text is cut without asking.
  std::string text;
  for (int i = 0; i < 80; ++i) text += "word ";
  const auto r = post(c, "/embed", {{"inputs", text}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  const json openai = body_of(post(c, "/v1/embeddings", {{"input", "a"}}));
  EXPECT_EQ(openai["model"], "my-model");
}

TEST_F(InfoTokens, MetricsCountRequestsAndTimeTheirStages) {
  auto c = server_->client();
  ASSERT_TRUE(post(c, "/embed", {{"inputs", "count me"}}));
  ASSERT_TRUE(post(c, "/embed", {{"inputs", ""}}));
  ASSERT_TRUE(c.Get("/health"));
  const auto r = c.Get("/metrics");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  const std::string& m = r->body;
  for (const char* needle :
       {"il_request_count{route=\"/embed\",status=\"200\"}", "il_request_count{route=\"/embed\",status=\"422\"}",
        "il_request_count{route=\"/health\",status=\"200\"}", "il_queue_size ", "il_batch_tokens_bucket",
        "il_request_tokenization_duration_seconds_bucket", "il_request_queue_duration_seconds_count",
        "il_request_inference_duration_seconds_sum", "# TYPE il_request_count counter",
        "# TYPE il_cuda_graphs gauge\nil_cuda_graphs "})
    EXPECT_NE(m.find(needle), std::string::npos) << needle << "\n" << m.substr(0, 2000);
  // The CPU counts no energy: the metric is absent rather than a made-up zero.
  EXPECT_EQ(m.find("il_device_energy_joules_total"), std::string::npos);
}

TEST(ServerMetrics, DeviceEnergyAppearsOnceSet) {
  server::Metrics metrics;
  EXPECT_EQ(metrics.render().find("il_device_energy_joules_total"), std::string::npos);
  metrics.set_device_energy(12.5);
  const std::string m = metrics.render();
  EXPECT_NE(m.find("# TYPE il_device_energy_joules_total counter\nil_device_energy_joules_total 12.500\n"),
            std::string::npos)
      << m;
}

TEST(ServerMetrics, GenerationCountsTheLoopGuardsInterventions) {
  server::Metrics metrics;
  EXPECT_EQ(metrics.render().find("il_generation_loop_guard_total"), std::string::npos);  // not generating
  GenerationLoad load;
  load.running = 2;
  load.waiting = 1;
  load.kv_pages_used = 10;
  load.kv_pages_total = 64;
  load.guarded_tokens = 7;
  load.backfilled = 3;
  load.prefilling = 1;
  metrics.set_generation_load(load);
  const std::string m = metrics.render();
  EXPECT_NE(m.find("# TYPE il_generation_loop_guard_total counter\nil_generation_loop_guard_total 7\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("il_generation_backfilled_total 3\n"), std::string::npos) << m;
  EXPECT_NE(m.find("il_generation_waiting 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("il_generation_prefilling 1\n"), std::string::npos) << m;
}

TEST_F(InfoTokens, SmallBatchBudgetStillAnswersBigRequests) {
  // 32 inputs of ~30 tokens with a 512-token, 8-sequence budget: the request is split across
  // several passes and must come back whole and in order.
  auto c = server_->client();
  std::vector<std::string> texts;
  for (int i = 0; i < 32; ++i) texts.push_back("input number " + std::to_string(i) + " with a few more words in it to be long");
  const json j = body_of(post(c, "/embed", {{"inputs", texts}}));
  ASSERT_EQ(j.size(), texts.size());
  const auto want = cli_embeddings("bert-mean", texts, {"--normalize"});
  for (std::size_t i = 0; i < texts.size(); ++i)
    EXPECT_LE(max_abs_diff(j[i].get<std::vector<float>>(), want[i]), kTolerance) << i;
}

TEST(RandomWeights, ConfigAloneServesWithTheGivenTokenizer) {
  const std::string dir = fixture_path("bert-mean");
  ServerProcess server("", {"--config", dir + "/config.json", "--tokenizer", dir});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const json info = body_of(c.Get("/info"));
  EXPECT_EQ(info["model_id"], "bert-mean");
  EXPECT_EQ(info["max_input_length"], 64);
  const json j = body_of(post(c, "/embed", {{"inputs", {"hello", "world"}}}));
  ASSERT_EQ(j.size(), 2u) << j.dump();
  EXPECT_EQ(j[0].size(), 32u);
  EXPECT_EQ(server.terminate(), 0);
}

TEST(RandomWeights, ModelAndConfigTogetherAreAUsageError) {
  const auto r = cli_test::run_cli(cli_test::cli_args({"serve", "--model", fixture_path("bert-mean"), "--config",
                                                       fixture_path("bert-mean") + "/config.json", "--port", "0"}));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("exactly one of --model"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace il::server_test
