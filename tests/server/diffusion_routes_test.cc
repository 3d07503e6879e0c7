// The OpenAI generation routes on a block-diffusion model (tests/fixtures/diffusion-gemma-pipeline:
// the DiffusionGemma fixture's weights with a tokenizer and chat template of our own): a seeded
// completion reproduces itself, streamed chunks (one run per committed canvas) join to the whole
// answer with usage counts, and requests in flight together are denoised in one forward each
// step yet answer exactly as each does alone.
#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "server_test_util.h"

namespace il::server_test {
namespace {

const char* kModel = "diffusion-gemma-pipeline";

std::vector<std::string> events(const std::string& body) {
  std::vector<std::string> out;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
  return out;
}

json completion(const std::string& prompt, int seed, std::size_t max_tokens) {
  return {{"model", "dg"}, {"prompt", prompt}, {"seed", seed}, {"max_tokens", max_tokens}};
}

TEST(DiffusionRoutes, SeededCompletionsReproduceAndStream) {
  ServerProcess server(kModel, {"--device", "cpu", "--kv-page-size", "4"});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const auto a = post(c, "/v1/completions", completion("the cat", 3, 16));
  const auto b = post(c, "/v1/completions", completion("the cat", 3, 16));
  const auto other = post(c, "/v1/completions", completion("the cat", 4, 16));
  ASSERT_TRUE(a && b && other);
  ASSERT_EQ(a->status, 200) << a->body;
  const json ja = json::parse(a->body);
  EXPECT_EQ(ja.at("choices")[0].at("text"), json::parse(b->body).at("choices")[0].at("text"));
  EXPECT_NE(ja.at("choices")[0].at("text"), json::parse(other->body).at("choices")[0].at("text"));
  EXPECT_EQ(ja.at("usage").at("completion_tokens"), 16);  // two canvases of 8, no end id drawn here
  EXPECT_EQ(ja.at("choices")[0].at("finish_reason"), "length");

  json chat = {{"model", "dg"}, {"seed", 5}, {"max_tokens", 16},
               {"messages", json::array({{{"role", "user"}, {"content", "the cat sat"}}})}};
  const auto whole = post(c, "/v1/chat/completions", chat);
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  chat["stream"] = true;
  chat["stream_options"] = {{"include_usage", true}};
  const auto streamed = post(c, "/v1/chat/completions", chat);
  ASSERT_TRUE(streamed);
  ASSERT_EQ(streamed->status, 200) << streamed->body;
  const auto ev = events(streamed->body);
  ASSERT_GE(ev.size(), 4u) << streamed->body;
  EXPECT_EQ(ev.back(), "[DONE]");
  std::string text;
  for (std::size_t i = 0; i + 2 < ev.size(); ++i) {
    const json j = json::parse(ev[i]);
    if (!j.at("choices").empty()) text += j.at("choices")[0].at("delta").value("content", "");
  }
  const json w = json::parse(whole->body);
  EXPECT_EQ(text, w.at("choices")[0].at("message").at("content"));
  const json usage = json::parse(ev[ev.size() - 2]);
  EXPECT_EQ(usage.at("usage").at("completion_tokens"), w.at("usage").at("completion_tokens"));
  EXPECT_EQ(usage.at("usage").at("prompt_tokens"), w.at("usage").at("prompt_tokens"));
  EXPECT_EQ(server.terminate(), 0);
}

// A stop string ends the answer where it first appears: the same seeded answer, cut before it,
// finish_reason "stop", fewer completion tokens; a string that never appears changes nothing.
TEST(DiffusionRoutes, StopStringsCutTheAnswer) {
  ServerProcess server(kModel, {"--device", "cpu", "--kv-page-size", "4"});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const auto full = post(c, "/v1/completions", completion("the cat", 3, 24));
  ASSERT_TRUE(full);
  ASSERT_EQ(full->status, 200) << full->body;
  const std::string text = json::parse(full->body).at("choices")[0].at("text");
  ASSERT_GE(text.size(), 6u) << text;
  // Two bytes past the first third, at their first occurrence (cut at a character boundary).
  std::size_t at = text.size() / 3;
  while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
  std::string stop = text.substr(at, 1);
  while (at + stop.size() < text.size() && (static_cast<unsigned char>(text[at + stop.size()]) & 0xC0) == 0x80)
    stop += text[at + stop.size()];
  at = text.find(stop);
  json body = completion("the cat", 3, 24);
  body["stop"] = stop;
  const auto cut = post(c, "/v1/completions", body);
  ASSERT_TRUE(cut);
  ASSERT_EQ(cut->status, 200) << cut->body;
  const json j = json::parse(cut->body);
  EXPECT_EQ(j.at("choices")[0].at("text"), text.substr(0, at)) << "stop '" << stop << "'";
  EXPECT_EQ(j.at("choices")[0].at("finish_reason"), "stop");
  EXPECT_LT(j.at("usage").at("completion_tokens").get<int>(), 24);
  body["stop"] = json::array({"zq-never-qz"});
  const auto same = post(c, "/v1/completions", body);
  ASSERT_TRUE(same);
  EXPECT_EQ(json::parse(same->body).at("choices")[0].at("text"), text);
  body["stop"] = json::array({""});
  const auto empty = post(c, "/v1/completions", body);
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->status, 422) << empty->body;  // refused by the route
  EXPECT_EQ(server.terminate(), 0);
}

// Six clients at once: their canvases share forwards, and each answer is the one it gets alone.
TEST(DiffusionRoutes, RequestsDenoisedTogetherAnswerAsAlone) {
  ServerProcess server(kModel, {"--device", "cpu", "--kv-page-size", "4"});
  ASSERT_TRUE(server.started());
  std::vector<std::string> alone(6), together(6);
  {
    auto c = server.client();
    for (std::size_t i = 0; i < 6; ++i) {
      const auto r = post(c, "/v1/completions", completion(i % 2 ? "the hat" : "a dog ran", 10 + static_cast<int>(i), 24));
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status, 200) << r->body;
      alone[i] = json::parse(r->body).at("choices")[0].at("text");
    }
  }
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < 6; ++i)
    clients.emplace_back([&, i] {
      auto c = server.client();
      const auto r = post(c, "/v1/completions", completion(i % 2 ? "the hat" : "a dog ran", 10 + static_cast<int>(i), 24));
      if (r && r->status == 200) together[i] = json::parse(r->body).at("choices")[0].at("text");
    });
  for (auto& t : clients) t.join();
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(together[i], alone[i]) << "client " << i;
  // Read at once, no polling: the gauges are published before a step's answers go out.
  auto c = server.client();
  const auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("il_generation_running 0"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("il_kv_cache_pages_used 0"), std::string::npos);
  EXPECT_EQ(server.terminate(), 0);
}

}  // namespace
}  // namespace il::server_test
