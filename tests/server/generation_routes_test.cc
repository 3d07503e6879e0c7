// The OpenAI generation routes on the tiny GLM-OCR (tests/fixtures/glm-ocr-pipeline: a whole
// folder with tokenizer, image processor and chat template): a chat completion with a page image
// gives the text transformers generated from the same PNG bytes (greedy: the folder's
// generation_config.json does not sample), whole and streamed as server-sent events; requests in
// flight together, stop strings, client departures, limits and errors in OpenAI's shape.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "server_test_util.h"

namespace il::server_test {
namespace {

const char* kModel = "glm-ocr-pipeline";

json expected() {
  std::ifstream in(cli_test::fixture_dir(kModel) / "expected.json");
  return json::parse(in);
}

std::string data_uri(const std::string& page) {
  return "data:image/png;base64," + base64_file(cli_test::fixture_dir(kModel) / page);
}

const char* task_text(const std::string& task) {
  return task == "table" ? "Table Recognition:" : task == "formula" ? "Formula Recognition:" : "Text Recognition:";
}

json chat_body(const json& c, std::size_t max_tokens) {
  return {{"model", "glm-ocr"},
          {"max_tokens", max_tokens},
          {"messages",
           json::array({{{"role", "user"},
                         {"content", json::array({{{"type", "image_url"},
                                                   {"image_url", {{"url", data_uri(c.at("page"))}}}},
                                                  {{"type", "text"}, {"text", task_text(c.at("task"))}}})}}})}};
}

// The events of a server-sent-events body: each `data: ` payload.
std::vector<std::string> events(const std::string& body) {
  std::vector<std::string> out;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
  return out;
}

TEST(GenerationRoutes, ChatWithAPageImageMatchesTransformers) {
  ServerProcess server(kModel, {"--device", "cpu", "--kv-page-size", "4"});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const json e = expected();
  for (const json& k : e.at("cases")) {
    const std::size_t n = k.at("greedy").size();
    const auto r = post(c, "/v1/chat/completions", chat_body(k, n));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json j = body_of(r);
    EXPECT_EQ(j.at("object"), "chat.completion");
    EXPECT_EQ(j.at("choices")[0].at("message").at("role"), "assistant");
    EXPECT_EQ(j.at("choices")[0].at("message").at("content"), k.at("greedy_text")) << k.at("page") << k.at("task");
    EXPECT_EQ(j.at("choices")[0].at("finish_reason"), "length");
    EXPECT_EQ(j.at("usage").at("prompt_tokens"), k.at("input_ids").size()) << "the processor's prompt";
    EXPECT_EQ(j.at("usage").at("completion_tokens"), n);
    EXPECT_EQ(j.at("usage").at("total_tokens"), k.at("input_ids").size() + n);
  }
  EXPECT_EQ(server.terminate(), 0);
}

TEST(GenerationRoutes, StreamedChunksJoinToTheWholeAnswer) {
  ServerProcess server(kModel, {"--device", "cpu"});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const json k = expected().at("cases")[1];
  json body = chat_body(k, k.at("greedy").size());
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  const auto r = post(c, "/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type").rfind("text/event-stream", 0), 0u);
  const auto ev = events(r->body);
  ASSERT_GE(ev.size(), 4u) << r->body;
  EXPECT_EQ(ev.back(), "[DONE]");
  std::string text;
  std::string id;
  for (std::size_t i = 0; i + 3 < ev.size(); ++i) {
    const json j = json::parse(ev[i]);
    EXPECT_EQ(j.at("object"), "chat.completion.chunk");
    if (i == 0) {
      EXPECT_EQ(j.at("choices")[0].at("delta").at("role"), "assistant");
      id = j.at("id");
    }
    EXPECT_EQ(j.at("id"), id) << "one id for every chunk of a completion";
    EXPECT_TRUE(j.at("choices")[0].at("finish_reason").is_null());
    text += j.at("choices")[0].at("delta").value("content", "");
  }
  EXPECT_EQ(text, k.at("greedy_text"));
  const json last = json::parse(ev[ev.size() - 3]);
  EXPECT_EQ(last.at("choices")[0].at("finish_reason"), "length");
  EXPECT_EQ(last.at("usage").at("completion_tokens"), k.at("greedy").size());
  const json usage = json::parse(ev[ev.size() - 2]);  // stream_options.include_usage
  EXPECT_TRUE(usage.at("choices").empty());
  EXPECT_EQ(usage.at("usage").at("prompt_tokens"), k.at("input_ids").size());
  EXPECT_EQ(server.terminate(), 0);
}

// Eight clients at once over a cache that holds about two requests: they queue, join the running
// batch as pages free, and each gets transformers' text.
TEST(GenerationRoutes, ConcurrentRequestsJoinTheRunningBatch) {
  ServerProcess server(kModel, {"--device", "cpu", "--kv-cache-tokens", "200", "--kv-page-size", "4"});
  ASSERT_TRUE(server.started());
  const json e = expected();
  std::vector<std::string> got(8);
  std::vector<int> status(8, 0);
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < 8; ++i)
    clients.emplace_back([&, i] {
      auto c = server.client();
      const json& k = e.at("cases")[i % 4];
      json body = chat_body(k, k.at("greedy").size());
      body["stream"] = i % 2 == 1;
      const auto r = post(c, "/v1/chat/completions", body);
      if (!r) return;
      status[i] = r->status;
      if (i % 2 == 0) {
        got[i] = json::parse(r->body).at("choices")[0].at("message").at("content");
      } else {
        for (const std::string& ev : events(r->body))
          if (ev != "[DONE]") got[i] += json::parse(ev).at("choices")[0].at("delta").value("content", "");
      }
    });
  for (auto& t : clients) t.join();
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(status[i], 200) << "client " << i;
    EXPECT_EQ(got[i], e.at("cases")[i % 4].at("greedy_text")) << "client " << i;
  }
  // The scheduler publishes its gauges before it hands out the answers of a step, so a client
  // holding its whole answer already sees its sequence gone and its pages free.
  auto c = server.client();
  const auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  const std::string metrics = m->body;
  EXPECT_NE(metrics.find("il_time_to_first_token_seconds_count 8"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("il_generation_running 0"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("il_kv_cache_pages_used 0"), std::string::npos) << metrics;
  EXPECT_EQ(server.terminate(), 0);
}

TEST(GenerationRoutes, CompletionsAndStopStrings) {
  ServerProcess server(kModel, {"--device", "cpu"});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const json k = expected().at("cases")[0];
  const std::string full = k.at("greedy_text");
  // The prompt as token ids: the text prompt of the chat route without its image.
  auto r = post(c, "/v1/completions", {{"prompt", "Text Recognition:"}, {"max_tokens", 6}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = body_of(r);
  EXPECT_EQ(j.at("object"), "text_completion");
  const std::string plain = j.at("choices")[0].at("text");
  const std::size_t prompt_tokens = j.at("usage").at("prompt_tokens");
  // Default max_tokens is OpenAI's 16.
  r = post(c, "/v1/completions", {{"prompt", "Text Recognition:"}});
  ASSERT_TRUE(r);
  EXPECT_LE(body_of(r).at("usage").at("completion_tokens").get<int>(), 16);
  // A stop string: the answer ends just before it (never holds it), finish_reason stop, also
  // streamed.
  const std::string stop = full.substr(10, 3);
  json chat = chat_body(k, k.at("greedy").size());
  chat["stop"] = stop;
  r = post(c, "/v1/chat/completions", chat);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  j = body_of(r);
  EXPECT_EQ(j.at("choices")[0].at("message").at("content"), full.substr(0, full.find(stop)));
  EXPECT_EQ(j.at("choices")[0].at("finish_reason"), "stop");
  chat["stream"] = true;
  r = post(c, "/v1/chat/completions", chat);
  ASSERT_TRUE(r);
  std::string streamed;
  for (const std::string& ev : events(r->body))
    if (ev != "[DONE]") streamed += json::parse(ev).at("choices")[0].at("delta").value("content", "");
  EXPECT_EQ(streamed, full.substr(0, full.find(stop)));
  (void)plain;
  (void)prompt_tokens;
  EXPECT_EQ(server.terminate(), 0);
}

void expect_openai_error(const httplib::Result& r, int status, const std::string& needle) {
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, status) << r->body;
  const json j = json::parse(r->body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error") && j["error"].is_object()) << r->body;
  EXPECT_TRUE(j["error"].contains("type"));
  const std::string msg = j["error"].value("message", "");
  EXPECT_NE(msg.find(needle), std::string::npos) << msg;
}

TEST(GenerationRoutes, BadRequestsGetOpenAiErrors) {
  ServerProcess server(kModel, {"--device", "cpu", "--max-images-per-request", "1", "--max-new-tokens-limit", "100"});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const json k = expected().at("cases")[0];
  expect_openai_error(post(c, "/v1/chat/completions", {{"messages", json::array()}}), 422, "messages");
  json b = chat_body(k, 8);
  b["n"] = 2;
  expect_openai_error(post(c, "/v1/chat/completions", b), 422, "'n'");
  b = chat_body(k, 500);
  expect_openai_error(post(c, "/v1/chat/completions", b), 422, "max_tokens");
  b = chat_body(k, 8);
  b["temperature"] = -1;
  expect_openai_error(post(c, "/v1/chat/completions", b), 422, "temperature");
  b = chat_body(k, 8);
  b["messages"][0]["content"][0]["image_url"]["url"] = "data:image/png;base64,bm90IGFuIGltYWdl";
  expect_openai_error(post(c, "/v1/chat/completions", b), 422, "image 1");
  b = chat_body(k, 8);
  b["messages"][0]["content"][0]["image_url"]["url"] = "https://example.com/page.png";
  expect_openai_error(post(c, "/v1/chat/completions", b), 422, "fetches no URLs");
  b = chat_body(k, 8);
  b["messages"][0]["content"].push_back(b["messages"][0]["content"][0]);
  expect_openai_error(post(c, "/v1/chat/completions", b), 413, "max-images-per-request");
  b = chat_body(k, 8);
  b["messages"][0]["role"] = "wizard";
  expect_openai_error(post(c, "/v1/chat/completions", b), 422, "role");
  expect_openai_error(post(c, "/v1/completions", {{"prompt", json::array({999999})}}), 422, "vocabulary");
  expect_openai_error(post_raw(c, "/v1/completions", "{not json"), 422, "");
  // After all that the server still answers.
  const auto ok = post(c, "/v1/completions", {{"prompt", "Text"}, {"max_tokens", 2}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  // /health generates a token; /v1/models lists the one model.
  const auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200) << health->body;
  const auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(body_of(models).at("data")[0].at("id"), kModel);
  EXPECT_EQ(server.terminate(), 0);
}

TEST(GenerationRoutes, EmbeddingModelsRefuseGenerationAndBackAgain) {
  ServerProcess embed("bert-mean");
  ASSERT_TRUE(embed.started());
  auto c = embed.client();
  expect_openai_error(post(c, "/v1/chat/completions", {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}}),
                      424, "does not generate");
  EXPECT_EQ(embed.terminate(), 0);
  ServerProcess gen(kModel, {"--device", "cpu"});
  ASSERT_TRUE(gen.started());
  auto g = gen.client();
  const auto r = post(g, "/v1/embeddings", {{"input", "hello"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 424) << r->body;
  // /info says what it is: a generating model reading pages, not an embedding model.
  const json info = body_of(g.Get("/info"));
  EXPECT_EQ(info["model_type"], json({{"generation", {{"ocr", true}}}})) << info.dump();
  EXPECT_EQ(info["lanes"], 1);
  EXPECT_EQ(gen.terminate(), 0);
}

// serve --config (random weights, for load tests) takes its chat template from a --tokenizer
// folder; given the tokenizer.json alone it has none, and the chat route says so.
TEST(GenerationRoutes, RandomWeightsTakeTheChatTemplateOfTheTokenizerFolder) {
  const std::string dir = cli_test::fixture_dir(kModel).string();
  const json chat = {{"max_tokens", 3}, {"messages", json::array({{{"role", "user"}, {"content", "hello there"}}})}};
  {
    ServerProcess server("", {"--config", dir + "/config.json", "--tokenizer", dir, "--device", "cpu"});
    ASSERT_TRUE(server.started());
    auto c = server.client();
    const auto r = post(c, "/v1/chat/completions", chat);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(body_of(r).at("usage").at("completion_tokens"), 3);
    EXPECT_EQ(server.terminate(), 0);
  }
  ServerProcess bare("", {"--config", dir + "/config.json", "--tokenizer", dir + "/tokenizer.json", "--device", "cpu"});
  ASSERT_TRUE(bare.started());
  auto c = bare.client();
  expect_openai_error(post(c, "/v1/chat/completions", chat), 424, "no chat template");
  EXPECT_EQ(bare.terminate(), 0);
}

// A streaming client that leaves: its sequence is dropped at the next step (counted), and the
// cache is empty again.
TEST(GenerationRoutes, AClientThatLeavesFreesItsSequence) {
  ServerProcess server(kModel, {"--device", "cpu"});
  ASSERT_TRUE(server.started());
  {
    RawConnection conn(server.port());
    ASSERT_TRUE(conn.connected());
    const std::string body =
        json{{"prompt", "Text Recognition:"}, {"max_tokens", 1000}, {"stream", true}, {"ignore_eos", true}}.dump();
    ASSERT_TRUE(conn.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          "Content-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }  // closed mid-stream
  auto c = server.client();
  bool freed = false;
  for (int i = 0; i < 100 && !freed; ++i) {
    const auto m = c.Get("/metrics");
    ASSERT_TRUE(m);
    // The sequence dropped and the request's concurrency slot given back.
    freed = m->body.find("il_generation_running 0") != std::string::npos &&
            m->body.find("il_kv_cache_pages_used 0") != std::string::npos &&
            m->body.find("il_requests_in_flight 0\n") != std::string::npos;  // /metrics is not a compute route
    if (!freed) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(freed);
  const auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("il_generation_cancelled_total 1"), std::string::npos)
      << "1,000 tokens take longer than the client stayed: " << m->body;
  EXPECT_EQ(server.terminate(), 0);
}

std::vector<json> ndjson(const std::string& body) {
  std::vector<json> out;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

// /ocr: page images read with the model's OCR defaults give transformers' text (24 tokens are
// too few for the 30-gram guard to act), whole and as NDJSON, pages in order.
TEST(OcrRoute, PagesMatchTransformersWholeAndStreamed) {
  ServerProcess server(kModel, {"--device", "cpu"});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const json e = expected();
  const json& p1 = e.at("cases")[0];
  const json& p2 = e.at("cases")[1];
  const json body = {{"images", json::array({data_uri("page2.png"), data_uri("page1.png")})}, {"max_tokens", 24}};
  auto r = post(c, "/ocr", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = body_of(r);
  ASSERT_EQ(j.at("pages").size(), 2u);
  EXPECT_EQ(j.at("pages")[0].at("page"), 1);
  EXPECT_EQ(j.at("pages")[0].at("text"), p2.at("greedy_text"));
  EXPECT_EQ(j.at("pages")[1].at("text"), p1.at("greedy_text"));
  EXPECT_FALSE(j.at("pages")[0].contains("blocks")) << "GLM-OCR writes no grounded blocks";
  EXPECT_EQ(j.at("text"), p2.at("greedy_text").get<std::string>() + "\n\n" + p1.at("greedy_text").get<std::string>());
  EXPECT_EQ(j.at("usage").at("prompt_tokens"), p1.at("input_ids").size() + p2.at("input_ids").size());
  json stream = body;
  stream["stream"] = true;
  stream["task"] = "formula";
  r = post(c, "/ocr", stream);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/x-ndjson");
  const auto lines = ndjson(r->body);
  ASSERT_EQ(lines.size(), 3u) << r->body;
  EXPECT_EQ(lines[0].at("page"), 1);
  EXPECT_EQ(lines[0].at("text"), e.at("cases")[3].at("greedy_text")) << "page2 with the formula task";
  EXPECT_EQ(lines[1].at("page"), 2);
  EXPECT_TRUE(lines[1].at("timings_ms").contains("decode"));
  EXPECT_EQ(lines[2].at("done"), true);
  EXPECT_EQ(lines[2].at("pages"), 2);
  EXPECT_EQ(server.terminate(), 0);
}

TEST(OcrRoute, PdfPagesAndRefusals) {
  if (std::system("pdftoppm -v >/dev/null 2>&1 && pdfinfo -v >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "pdftoppm / pdfinfo not installed (apt-get install poppler-utils)";
  ServerProcess server(kModel, {"--device", "cpu"});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const std::string pdf = cli_test::tiny_pdf({"one", "two", "three", "four"});
  auto r = post(c, "/ocr", {{"pdf", base64_of(pdf)}, {"pages", "2,4"}, {"dpi", 100}, {"max_tokens", 5}, {"stream", true}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const auto lines = ndjson(r->body);
  ASSERT_EQ(lines.size(), 3u) << r->body;
  EXPECT_EQ(lines[0].at("page"), 2);
  EXPECT_EQ(lines[1].at("page"), 4);
  EXPECT_EQ(lines[0].at("tokens"), 5);
  // Refusals, the server staying up.
  r = post(c, "/ocr", {{"pdf", base64_of("%PDF-1.4 nothing")}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 422) << r->body;
  EXPECT_EQ(r->body.find("/tmp"), std::string::npos) << "no server path in the message: " << r->body;
  r = post(c, "/ocr", {{"pdf", base64_of("not a pdf")}});
  EXPECT_EQ(r->status, 422);
  r = post(c, "/ocr", {{"images", json::array({data_uri("page1.png")})}, {"pdf", base64_of(pdf)}});
  EXPECT_EQ(r->status, 422);
  r = post(c, "/ocr", {{"images", json::array({data_uri("page1.png")})}, {"task", "poem"}});
  EXPECT_EQ(r->status, 422);
  r = post(c, "/ocr", {{"pdf", base64_of(pdf)}, {"pages", "3-1"}});
  EXPECT_EQ(r->status, 422);
  // An image that does not decode: its page says why, the other page is read.
  r = post(c, "/ocr", {{"images", json::array({base64_of("not an image"), data_uri("page1.png")})}, {"max_tokens", 3}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = body_of(r);
  EXPECT_TRUE(j.at("pages")[0].contains("error"));
  EXPECT_EQ(j.at("pages")[1].at("tokens"), 3);
  EXPECT_EQ(server.terminate(), 0);
  ServerProcess embed("bert-mean");
  ASSERT_TRUE(embed.started());
  auto b = embed.client();
  r = post(b, "/ocr", {{"images", json::array({data_uri("page1.png")})}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 424);
  EXPECT_EQ(embed.terminate(), 0);
}

std::string page_bytes(const std::string& page) {
  std::ifstream in(cli_test::fixture_dir(kModel) / page, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A PDF of n pages, each 72 × 40 points, all drawing one shared content stream (a line of text
// and a box): a thousand pages take about 60 KB.
std::string many_page_pdf(std::size_t n) {
  const std::string content = "BT /F1 9 Tf 4 24 Td (page text) Tj ET 0 0 1 rg 4 4 20 10 re f";
  std::vector<std::string> objs = {"<< /Type /Catalog /Pages 2 0 R >>", "",
                                   "<< /Length " + std::to_string(content.size()) + " >>\nstream\n" + content +
                                       "\nendstream",
                                   "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"};
  std::string kids;
  for (std::size_t i = 0; i < n; ++i) {
    kids += std::to_string(5 + i) + " 0 R ";
    objs.push_back("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 72 40] /Contents 3 0 R /Resources << /Font << /F1 4 0 R "
                   ">> >> >>");
  }
  objs[1] = "<< /Type /Pages /Kids [" + kids + "] /Count " + std::to_string(n) + " >>";
  return cli_test::pdf_from_objects(objs);
}

// The server's peak resident memory so far (VmHWM of /proc/PID/status), in KiB.
long peak_rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// A 1,000-page PDF is read a few pages at a time: every page is answered, streamed in page order,
// and the server's peak memory grows by less than 64 MiB over what a 20-page PDF took (holding
// the rendered pages would take about 150 MiB more).
TEST(OcrRoute, AThousandPagePdfInBoundedMemory) {
  if (std::system("pdftoppm -v >/dev/null 2>&1 && pdfinfo -v >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "pdftoppm / pdfinfo not installed (apt-get install poppler-utils)";
  ServerProcess server(kModel, {"--device", "cpu"});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  c.set_read_timeout(600, 0);
  const auto read_all = [&](std::size_t pages) {
    const auto r = post(c, "/ocr", {{"pdf", base64_of(many_page_pdf(pages))}, {"dpi", 72}, {"max_tokens", 1}, {"stream", true}});
    EXPECT_TRUE(r);
    if (!r) return;
    EXPECT_EQ(r->status, 200) << r->body.substr(0, 500);
    const auto lines = ndjson(r->body);
    ASSERT_EQ(lines.size(), pages + 1) << r->body.substr(0, 500);
    for (std::size_t i = 0; i < pages; ++i) {
      EXPECT_EQ(lines[i].at("page"), i + 1);
      EXPECT_FALSE(lines[i].contains("error")) << lines[i];
    }
    EXPECT_EQ(lines[pages].at("pages"), pages);
  };
  read_all(20);
  const long before = peak_rss_kib(server.pid());
  read_all(1000);
  const long after = peak_rss_kib(server.pid());
  ASSERT_GT(before, 0);
  EXPECT_LT(after - before, 64 * 1024) << "peak RSS " << before << " KiB after 20 pages, " << after << " after 1,000";
  std::printf("[ocr] peak RSS %ld KiB after 20 pages, %ld KiB after 1,000\n", before, after);
  EXPECT_EQ(server.terminate(), 0);
}

// /ocr as a multipart/form-data upload (curl -F file=@page.png -F max_tokens=24): the pages read
// exactly as the same files sent as base64 in JSON; a PDF part with its page selection; malformed
// forms and unknown fields refused naming the problem.
TEST(OcrRoute, MultipartUploadsReadAsJson) {
  ServerProcess server(kModel, {"--device", "cpu"});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const json e = expected();
  auto r = c.Post("/ocr", httplib::MultipartFormDataItems{{"file", page_bytes("page2.png"), "page2.png", "image/png"},
                                                          {"file", page_bytes("page1.png"), "page1.png", "image/png"},
                                                          {"max_tokens", "24", "", ""}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = body_of(r);
  ASSERT_EQ(j.at("pages").size(), 2u);
  EXPECT_EQ(j.at("pages")[0].at("text"), e.at("cases")[1].at("greedy_text"));
  EXPECT_EQ(j.at("pages")[1].at("text"), e.at("cases")[0].at("greedy_text"));
  const auto refused = [&](const httplib::MultipartFormDataItems& items, const std::string& says) {
    auto bad = c.Post("/ocr", items);
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 422) << bad->body;
    EXPECT_NE(bad->body.find(says), std::string::npos) << bad->body;
  };
  refused({{"max_tokens", "5", "", ""}}, "no file");
  refused({{"file", page_bytes("page1.png"), "p.png", ""}, {"colour", "red", "", ""}}, "'colour' is not read");
  refused({{"file", page_bytes("page1.png"), "p.png", ""}, {"stream", "maybe", "", ""}}, "'stream'");
  auto raw = c.Post("/ocr", "--x\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc",
                    "multipart/form-data; boundary=x");
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->status, 422) << raw->body;
  EXPECT_NE(raw->body.find("not closed by the boundary"), std::string::npos) << raw->body;
  auto text = c.Post("/ocr", "hello", "text/plain");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->status, 415);
  if (std::system("pdftoppm -v >/dev/null 2>&1 && pdfinfo -v >/dev/null 2>&1") == 0) {
    const std::string pdf = cli_test::tiny_pdf({"one", "two", "three"});
    r = c.Post("/ocr", httplib::MultipartFormDataItems{{"document", pdf, "doc.pdf", "application/pdf"},
                                                       {"pages", "2", "", ""},
                                                       {"dpi", "100", "", ""},
                                                       {"max_tokens", "4", "", ""}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json p = body_of(r);
    ASSERT_EQ(p.at("pages").size(), 1u);
    EXPECT_EQ(p.at("pages")[0].at("page"), 2);
    const json same = body_of(post(c, "/ocr", {{"pdf", base64_of(pdf)}, {"pages", "2"}, {"dpi", 100}, {"max_tokens", 4}}));
    EXPECT_EQ(p.at("pages")[0].at("text"), same.at("pages")[0].at("text"));
  }
  EXPECT_EQ(server.terminate(), 0);
}

}  // namespace
}  // namespace il::server_test
