// Error statuses and bodies: 422 (JSON, types, empty, too many, too long, UTF-8), 413, 401, 429,
// and that none of them disturbs the server or the requests around them.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "server_test_util.h"

namespace il::server_test {
namespace {

class Errors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess("bert-mean", {"--max-client-batch-size", "4", "--payload-limit", "2000"});
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->terminate(), 0);
    delete server_;
  }
  void SetUp() override { ASSERT_TRUE(server_->started()); }
  static ServerProcess* server_;
};
ServerProcess* Errors::server_ = nullptr;

TEST_F(Errors, InvalidJsonIs422) {
  auto c = server_->client();
  expect_error(post_raw(c, "/embed", "{\"inputs\": "), 422, "Validation");
  expect_error(post_raw(c, "/embed", "[1, 2]"), 422, "Validation");
  expect_error(post_raw(c, "/v1/embeddings", "not json"), 422, "Validation");
}

TEST_F(Errors, WrongTypesAre422) {
  auto c = server_->client();
  expect_error(post(c, "/embed", {{"inputs", 5}}), 422, "Validation");
  expect_error(post(c, "/embed", {{"inputs", json::array({"a", 1})}}), 422, "Validation");
  expect_error(post(c, "/embed", {{"inputs", "a"}, {"normalize", "yes"}}), 422, "Validation");
  expect_error(post(c, "/embed", {{"inputs", "a"}, {"dimensions", -1}}), 422, "Validation");
  expect_error(post(c, "/embed", {{"inputs", "a"}, {"dimensions", 33}}), 422, "Validation");
  expect_error(post(c, "/embed", {{"inputs", {1.5, 2}}}), 422, "Validation");
  expect_error(post(c, "/embed", {{"inputs", {99999}}}), 422, "Validation");
  expect_error(post(c, "/embed", {{"texts", "a"}}), 422, "Validation");
  expect_error(post(c, "/v1/embeddings", {{"input", "a"}, {"model", 3}}), 422, "Validation");
}

TEST_F(Errors, EmptyInputsAre422) {
  auto c = server_->client();
  expect_error(post(c, "/embed", {{"inputs", ""}}), 422, "Validation");
  expect_error(post(c, "/embed", {{"inputs", json::array()}}), 422, "Validation");
  expect_error(post(c, "/embed", {{"inputs", {"a", ""}}}), 422, "Validation");
  expect_error(post(c, "/v1/embeddings", {{"input", {json::array()}}}), 422, "Validation");
}

TEST_F(Errors, TooManyInputsAre422) {
  auto c = server_->client();
  expect_error(post(c, "/embed", {{"inputs", {"a", "b", "c", "d", "e"}}}), 422, "Validation");
  const auto ok = post(c, "/embed", {{"inputs", {"a", "b", "c", "d"}}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

TEST_F(Errors, TooLongWithoutTruncationIs422) {
  auto c = server_->client();
  std::string text;
  for (int i = 0; i < 80; ++i) text += "word ";
  expect_error(post(c, "/embed", {{"inputs", text}}), 422, "Tokenizer");
  std::vector<int> ids(65, 5);
  expect_error(post(c, "/embed", {{"inputs", ids}}), 422, "Validation");
  const auto cut = post(c, "/embed", {{"inputs", ids}, {"truncate", true}});
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->status, 200) << cut->body;
}

TEST_F(Errors, InvalidUtf8Is422) {
  auto c = server_->client();
  expect_error(post_raw(c, "/embed", "{\"inputs\": \"abc\xff\xfe\"}"), 422, "Validation");
  expect_error(post_raw(c, "/tokenize", "{\"inputs\": \"\xc3\"}"), 422, "Validation");
}

TEST_F(Errors, OverThePayloadLimitIs413) {
  auto c = server_->client();
  const std::string big(3000, 'a');
  expect_error(post(c, "/embed", {{"inputs", big}}), 413, "PayloadTooLarge");
  const auto after = post(c, "/embed", {{"inputs", "still fine"}});
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

TEST_F(Errors, UnknownRouteIs404) {
  auto c = server_->client();
  expect_error(post(c, "/nope", {{"inputs", "a"}}), 404, "NotFound");
}

TEST_F(Errors, ABadRequestAmongGoodOnesDisturbsNone) {
  std::atomic<int> good_ok{0}, bad_422{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      auto c = server_->client();
      for (int k = 0; k < 8; ++k) {
        if ((t + k) % 2) {
          const auto r = post(c, "/embed", {{"inputs", {1, 2, 99999}}});
          if (r && r->status == 422) ++bad_422;
        } else {
          const auto r = post(c, "/embed", {{"inputs", {"hello", "world"}}});
          if (r && r->status == 200) ++good_ok;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(good_ok.load(), 24);
  EXPECT_EQ(bad_422.load(), 24);
}

TEST_F(Errors, AClientThatLeavesMidRequestDoesNotHurtTheServer) {
  for (int i = 0; i < 5; ++i) {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(0, 1000);  // 1 ms: gives up (and closes) before the answer
    std::vector<std::string> texts(4, std::string(200, 'x') + " word");
    (void)post(c, "/embed", {{"inputs", texts}, {"truncate", true}});
  }
  auto c = server_->client();
  const auto r = post(c, "/embed", {{"inputs", "after the departures"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

// Parses "il_dropped_count N" out of /metrics.
long dropped_count(httplib::Client& c) {
  const auto r = c.Get("/metrics");
  if (!r) return -1;
  const auto at = r->body.find("\nil_dropped_count ");
  return at == std::string::npos ? -1 : std::stol(r->body.substr(at + 18));
}

TEST(Departures, AQueuedRequestWhoseClientLeftIsDropped) {
  // One sequence per pass: a request queued behind a 64-input one waits ~64 passes, and its
  // client gives up after 1 ms, long before its turn.
  ServerProcess server("bert-mean", {"--max-batch-requests", "1", "--max-client-batch-size", "64"});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  ASSERT_EQ(dropped_count(c), 0);
  const std::vector<std::string> texts(64, "a text long enough to keep the single inference thread busy for a while");
  for (int attempt = 0; attempt < 10 && dropped_count(c) <= 0; ++attempt) {
    std::thread big([&] {
      auto bc = server.client();
      const auto r = post(bc, "/embed", {{"inputs", texts}});
      EXPECT_TRUE(r && r->status == 200);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    httplib::Client impatient("127.0.0.1", server.port());
    impatient.set_read_timeout(0, 1000);
    (void)post(impatient, "/embed", {{"inputs", "nobody waits for me"}});
    impatient.stop();
    big.join();
  }
  EXPECT_GT(dropped_count(c), 0);
  const auto after = post(c, "/embed", {{"inputs", "the server still answers"}});
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(server.terminate(), 0);
}

TEST(ApiKey, ComputeRoutesNeedTheKeyOthersDoNot) {
  ServerProcess server("bert-mean", {}, {"IL_API_KEY=sesame"});  // from the environment
  ASSERT_TRUE(server.started());
  auto c = server.client();
  expect_error(post(c, "/embed", {{"inputs", "a"}}), 401, "Unauthorized");
  expect_error(post(c, "/embed", {{"inputs", "a"}}, {{"Authorization", "Bearer wrong"}}), 401, "Unauthorized");
  expect_error(post(c, "/v1/embeddings", {{"input", "a"}}), 401, "Unauthorized");
  const auto ok = post(c, "/embed", {{"inputs", "a"}}, {{"Authorization", "Bearer sesame"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  const auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(server.terminate(), 0);
}

TEST(Backpressure, OverTheConcurrencyLimitIs429WithRetryAfter) {
  ServerProcess server("bert-mean", {"--max-concurrent-requests", "1", "--max-client-batch-size", "64"});
  ASSERT_TRUE(server.started());
  // Heavy requests from many clients at once: with one allowed in flight, some must be refused.
  // Rounds repeat until a refusal shows (timing-dependent, but 16 clients on one slot overlap
  // on the first round in practice); every answer is either 200 or 429.
  std::atomic<int> ok{0}, refused{0}, other{0};
  std::atomic<bool> retry_after{true};
  std::atomic<bool> connection_kept{false};  // a refused client must not hold a connection thread
  std::mutex others_mutex;
  std::string others;  // what the unexpected answers were, for the failure message
  std::vector<std::string> texts(64, "a fairly long text to keep the model busy for a while longer than usual");
  for (int round = 0; round < 20 && refused.load() == 0; ++round) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; ++t) {
      threads.emplace_back([&] {
        auto c = server.client();
        const auto t0 = std::chrono::steady_clock::now();
        const auto r = post(c, "/embed", {{"inputs", texts}});
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (r && r->status == 200) ++ok;
        else if (r && r->status == 429) {
          ++refused;
          if (!r->has_header("Retry-After")) retry_after = false;
          if (r->get_header_value("Connection") != "close") connection_kept = true;
          const json j = json::parse(r->body, nullptr, false);
          if (!j.is_object() || j.value("error_type", "") != "Overloaded") ++other;
        } else {
          ++other;
          std::lock_guard lock(others_mutex);
          others += "after " + std::to_string(ms) + " ms: " + (r ? "status " + std::to_string(r->status) + ": " + r->body.substr(0, 200)
                       : "no answer: " + httplib::to_string(r.error())) + "\n";
        }
      });
    }
    for (auto& th : threads) th.join();
  }
  EXPECT_GT(refused.load(), 0);
  EXPECT_GT(ok.load(), 0);
  EXPECT_EQ(other.load(), 0) << others;
  EXPECT_TRUE(retry_after.load());
  EXPECT_FALSE(connection_kept.load()) << "a 429 without Connection: close";
  EXPECT_EQ(server.terminate(), 0);
}

TEST(Shutdown, SigtermFinishesInFlightRequestsAndExitsZero) {
  ServerProcess server("bert-mean", {"--max-client-batch-size", "64"});
  ASSERT_TRUE(server.started());
  std::vector<std::string> texts(64, "some text to embed while the server is asked to stop");
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> threads;
  std::atomic<int> started{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      auto c = server.client();
      ++started;
      const auto r = post(c, "/embed", {{"inputs", texts}});
      // A request the server accepted must be answered; one that arrives after the listener
      // closed is refused at connect (no answer), which is not a failure of a served request.
      if (r && r->status == 200) ++ok;
      else if (r) ++failed;
    });
  }
  while (started.load() < 4) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(server.terminate(), 0);
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
}

// Idle keep-alive connections must not hold the exit back. httplib 0.11 notices a stop only
// between requests, so before the fix an idle connection kept the server for the whole
// keep-alive timeout (5 s by default: measured 5.0 s, 14 ms after). With a 120 s timeout the old
// behaviour outlasts terminate()'s 30 s wait and fails here; no timing threshold is asserted.
TEST(Shutdown, SigtermDoesNotWaitForIdleKeepAliveConnections) {
  ServerProcess server("bert-mean", {"--keep-alive-timeout", "120"});
  ASSERT_TRUE(server.started());
  std::vector<httplib::Client> idle;
  for (int i = 0; i < 3; ++i) {
    idle.push_back(server.client());
    const auto r = idle.back().Get("/health");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
  }
  EXPECT_EQ(server.terminate(), 0) << "the server waited for its idle keep-alive connections";
}

}  // namespace
}  // namespace il::server_test
