// /embed, /embed_all, /similarity and /v1/embeddings on the bert-mean fixture, compared with
// `inferencelayer embed` for the same inputs.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>

#include "server_test_util.h"

namespace il::server_test {
namespace {

const std::vector<std::string> kTexts = {"hello world", "good morning to you", "a"};

class EmbedRoutes : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess("bert-mean"); }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->terminate(), 0) << "SIGTERM must end the server with status 0";
    delete server_;
  }
  void SetUp() override { ASSERT_TRUE(server_->started()); }
  static ServerProcess* server_;
};
ServerProcess* EmbedRoutes::server_ = nullptr;

std::vector<std::vector<float>> rows(const json& j) { return j.get<std::vector<std::vector<float>>>(); }

void expect_same(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(max_abs_diff(got[i], want[i]), kTolerance) << "input " << i;
}

std::vector<float> decode_base64_f32(const std::string& s) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::vector<unsigned char> bytes;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    const int v = val(c);
    if (v < 0) continue;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push_back(static_cast<unsigned char>((acc >> bits) & 0xff));
    }
  }
  std::vector<float> out(bytes.size() / 4);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::uint32_t u = bytes[4 * i] | (bytes[4 * i + 1] << 8) | (bytes[4 * i + 2] << 16) |
                            (static_cast<std::uint32_t>(bytes[4 * i + 3]) << 24);
    std::memcpy(&out[i], &u, 4);
  }
  return out;
}

TEST_F(EmbedRoutes, BatchOfTextsEqualsTheCli) {
  auto c = server_->client();
  const auto r = post(c, "/embed", {{"inputs", kTexts}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  expect_same(rows(body_of(r)), cli_embeddings("bert-mean", kTexts, {"--normalize"}));
  for (const char* h : {"x-tokenization-time", "x-queue-time", "x-inference-time"})
    EXPECT_TRUE(r->has_header(h)) << h;
  EXPECT_GE(std::stod(r->get_header_value("x-inference-time")), 0.0);
}

TEST_F(EmbedRoutes, SingleTextGivesOneRow) {
  auto c = server_->client();
  const json j = body_of(post(c, "/embed", {{"inputs", "hello world"}}));
  ASSERT_TRUE(j.is_array());
  expect_same(rows(j), cli_embeddings("bert-mean", {"hello world"}, {"--normalize"}));
}

TEST_F(EmbedRoutes, NormalizeFalseEqualsCliNoNormalize) {
  auto c = server_->client();
  const json j = body_of(post(c, "/embed", {{"inputs", kTexts}, {"normalize", false}}));
  expect_same(rows(j), cli_embeddings("bert-mean", kTexts, {"--no-normalize"}));
}

TEST_F(EmbedRoutes, DimensionsEqualCliDimensions) {
  auto c = server_->client();
  const json j = body_of(post(c, "/embed", {{"inputs", kTexts}, {"dimensions", 8}}));
  const auto got = rows(j);
  ASSERT_EQ(got.at(0).size(), 8u);
  expect_same(got, cli_embeddings("bert-mean", kTexts, {"--normalize", "--dimensions", "8"}));
}

TEST_F(EmbedRoutes, PromptNameEqualsCliPromptName) {
  auto c = server_->client();
  const json j = body_of(post(c, "/embed", {{"inputs", kTexts}, {"prompt_name", "query"}}));
  expect_same(rows(j), cli_embeddings("bert-mean", kTexts, {"--normalize", "--prompt-name", "query"}));
  expect_error(post(c, "/embed", {{"inputs", "x"}, {"prompt_name", "nope"}}), 422, "Validation");
}

TEST_F(EmbedRoutes, TokenIdsEqualTheTextsTheyCameFrom) {
  auto c = server_->client();
  const json tok = body_of(post(c, "/tokenize", {{"inputs", kTexts}}));
  ASSERT_TRUE(tok.is_array());
  std::vector<std::vector<int>> ids;
  for (const json& seq : tok) {
    ids.emplace_back();
    for (const json& t : seq) ids.back().push_back(t["id"].get<int>());
  }
  const auto want = cli_embeddings("bert-mean", kTexts, {"--normalize"});
  expect_same(rows(body_of(post(c, "/embed", {{"inputs", ids}}))), want);
  expect_same(rows(body_of(post(c, "/embed", {{"inputs", ids[0]}}))), {want[0]});
}

// A folder pooled without its prompt (include_prompt: false): prompt_name gives the vectors
// sentence-transformers gives (the fixture's) and the CLI's; /info says how it pools.
TEST(EmbedPromptPooling, PromptNameLeavesThePromptOut) {
  ServerProcess server("bert-mean-noprompt");
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const json info = body_of(c.Get("/info"));
  EXPECT_EQ(info["include_prompt"], false);
  std::ifstream in(fixture_path("bert-mean-noprompt") + "/expected.json");
  const json expected = json::parse(in);
  std::map<std::string, std::vector<json>> by_prompt;
  for (const auto& k : expected["cases"])
    if (k.contains("prompt_name")) by_prompt[k["prompt_name"].get<std::string>()].push_back(k);
  ASSERT_FALSE(by_prompt.empty());
  for (const auto& [name, cases] : by_prompt) {
    std::vector<std::string> texts;
    for (const auto& k : cases) texts.push_back(k["input_text"]);
    const json j = body_of(post(c, "/embed", {{"inputs", texts}, {"prompt_name", name}, {"truncate", true}}));
    ASSERT_TRUE(j.is_array()) << j.dump();
    ASSERT_EQ(j.size(), cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i)
      EXPECT_LE(max_abs_diff(j[i].get<std::vector<float>>(), cases[i]["pooled"].get<std::vector<float>>()), 1e-4)
          << name << ": " << texts[i];
    expect_same(rows(j), cli_embeddings("bert-mean-noprompt", texts, {"--normalize", "--prompt-name", name}));
  }
  EXPECT_EQ(server.terminate(), 0);
}

TEST_F(EmbedRoutes, TruncationCutsFromTheChosenSide) {
  auto c = server_->client();
  std::string long_text;
  for (int i = 0; i < 100; ++i) long_text += "hello world ";
  expect_error(post(c, "/embed", {{"inputs", long_text}}), 422, "Tokenizer");
  const json right = body_of(post(c, "/embed", {{"inputs", long_text}, {"truncate", true}}));
  const json left = body_of(post(c, "/embed", {{"inputs", long_text + "good morning"}, {"truncate", true},
                                              {"truncation_direction", "Left"}}));
  ASSERT_TRUE(right.is_array() && left.is_array());
  // Left truncation keeps the end of the text, which differs from the start: the vectors differ.
  EXPECT_GT(max_abs_diff(right[0].get<std::vector<float>>(), left[0].get<std::vector<float>>()), 1e-4);
  expect_error(post(c, "/embed", {{"inputs", "x"}, {"truncation_direction", "up"}}), 422, "Validation");
}

TEST_F(EmbedRoutes, EmbedAllEqualsCliHiddenStates) {
  auto c = server_->client();
  const json j = body_of(post(c, "/embed_all", {{"inputs", kTexts}}));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), kTexts.size());
  const auto r = cli_test::run_cli(cli_test::cli_args({"embed", "--model", fixture_path("bert-mean"), "--no-progress",
                                                       "--output-kind", "hidden", kTexts[0], kTexts[1], kTexts[2]}));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = r.lines();
  ASSERT_EQ(lines.size(), kTexts.size());
  for (std::size_t i = 0; i < kTexts.size(); ++i) {
    const auto want = cli_test::parse_line(lines[i])["hidden"].get<std::vector<std::vector<float>>>();
    expect_same(j[i].get<std::vector<std::vector<float>>>(), want);
  }
}

TEST_F(EmbedRoutes, SimilarityIsTheCosineOfCliVectors) {
  auto c = server_->client();
  const json j = body_of(post(c, "/similarity", {{"inputs", {{"source_sentence", kTexts[0]},
                                                              {"sentences", {kTexts[1], kTexts[2], kTexts[0]}}}}}));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 3u);
  const auto v = cli_embeddings("bert-mean", kTexts, {"--normalize"});
  auto dot = [](const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
    return s;
  };
  EXPECT_NEAR(j[0].get<double>(), dot(v[0], v[1]), 1e-5);
  EXPECT_NEAR(j[1].get<double>(), dot(v[0], v[2]), 1e-5);
  EXPECT_NEAR(j[2].get<double>(), 1.0, 1e-5);
}

TEST_F(EmbedRoutes, OpenAiFloatAndBase64EqualTheCli) {
  auto c = server_->client();
  const auto want = cli_embeddings("bert-mean", kTexts, {"--normalize"});
  const json f = body_of(post(c, "/v1/embeddings", {{"input", kTexts}, {"model", "anything"}, {"encoding_format", "float"}}));
  ASSERT_TRUE(f.is_object()) << f.dump();
  EXPECT_EQ(f["object"], "list");
  EXPECT_EQ(f["model"], "bert-mean");
  ASSERT_EQ(f["data"].size(), kTexts.size());
  int tokens = 0;
  for (std::size_t i = 0; i < kTexts.size(); ++i) {
    EXPECT_EQ(f["data"][i]["object"], "embedding");
    EXPECT_EQ(f["data"][i]["index"], i);
    EXPECT_LE(max_abs_diff(f["data"][i]["embedding"].get<std::vector<float>>(), want[i]), kTolerance);
  }
  const json tok = body_of(post(c, "/tokenize", {{"inputs", kTexts}}));
  for (const json& seq : tok) tokens += static_cast<int>(seq.size());
  EXPECT_EQ(f["usage"]["prompt_tokens"], tokens);
  EXPECT_EQ(f["usage"]["total_tokens"], tokens);

  const json b = body_of(post(c, "/v1/embeddings", {{"input", kTexts}, {"encoding_format", "base64"}}));
  ASSERT_EQ(b["data"].size(), kTexts.size());
  for (std::size_t i = 0; i < kTexts.size(); ++i)
    EXPECT_LE(max_abs_diff(decode_base64_f32(b["data"][i]["embedding"].get<std::string>()), want[i]), kTolerance);

  const json d = body_of(post(c, "/v1/embeddings", {{"input", kTexts[0]}, {"dimensions", 4}}));
  EXPECT_LE(max_abs_diff(d["data"][0]["embedding"].get<std::vector<float>>(),
                         cli_embeddings("bert-mean", {kTexts[0]}, {"--normalize", "--dimensions", "4"})[0]),
            kTolerance);
  expect_error(post(c, "/v1/embeddings", {{"input", "x"}, {"encoding_format", "int8"}}), 422, "Validation");
}

TEST_F(EmbedRoutes, OpenAiTokenIdInputs) {
  auto c = server_->client();
  const json tok = body_of(post(c, "/tokenize", {{"inputs", kTexts[0]}}));
  std::vector<int> ids;
  for (const json& t : tok[0]) ids.push_back(t["id"].get<int>());
  const auto want = cli_embeddings("bert-mean", {kTexts[0]}, {"--normalize"})[0];
  const json one = body_of(post(c, "/v1/embeddings", {{"input", ids}}));
  EXPECT_LE(max_abs_diff(one["data"][0]["embedding"].get<std::vector<float>>(), want), kTolerance);
  const json two = body_of(post(c, "/v1/embeddings", {{"input", {ids, ids}}}));
  ASSERT_EQ(two["data"].size(), 2u);
  EXPECT_LE(max_abs_diff(two["data"][1]["embedding"].get<std::vector<float>>(), want), kTolerance);
  EXPECT_EQ(two["usage"]["prompt_tokens"], 2 * ids.size());
}

TEST_F(EmbedRoutes, CrossEncoderRoutesAnswer424) {
  auto c = server_->client();
  expect_error(post(c, "/rerank", {{"query", "a"}, {"texts", {"b"}}}), 424, "Backend");
  expect_error(post(c, "/v1/rerank", {{"query", "a"}, {"documents", {"b"}}}), 424, "Backend");
  expect_error(post(c, "/predict", {{"inputs", "a"}}), 424, "Backend");
}

TEST_F(EmbedRoutes, ImagesOnATextModelAnswer424AndTextItemsEmbed) {
  auto c = server_->client();
  const json image = {{"image", "data:image/png;base64,iVBORw0KGgo="}};
  expect_error(post(c, "/embed", {{"inputs", json::array({image})}}), 424, "Backend");
  expect_error(post(c, "/v1/embeddings", {{"input", image}}), 424, "Backend");
  expect_error(post(c, "/image_text_scores", {{"images", {"iVBORw0KGgo="}}, {"texts", {"a"}}}), 424, "Backend");
  // {"text": ...} items are texts on any model, mixed with plain strings.
  const json items = json::array({json{{"text", kTexts[0]}}, kTexts[1]});
  expect_same(rows(body_of(post(c, "/embed", {{"inputs", items}}))), cli_embeddings("bert-mean", {kTexts[0], kTexts[1]}));
  expect_error(post(c, "/embed", {{"inputs", json::array({json{{"text", "a"}, {"image", "b"}}})}}), 422, "Validation");
  expect_error(post(c, "/embed", {{"inputs", json::array({json{{"text", 3}}})}}), 422, "Validation");
}

TEST_F(EmbedRoutes, ConcurrentMixedRequestsAllEqualTheCli) {
  // Many clients at once: the inference thread packs their inputs into shared passes, and each
  // answer must still be exactly its own.
  const auto want = cli_embeddings("bert-mean", kTexts, {"--normalize"});
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto c = server_->client();
      for (int k = 0; k < 10; ++k) {
        const std::size_t i = static_cast<std::size_t>(t + k) % kTexts.size();
        const auto r = post(c, "/embed", {{"inputs", kTexts[i]}});
        if (!r || r->status != 200) { ++bad; continue; }
        const auto got = json::parse(r->body)[0].get<std::vector<float>>();
        if (max_abs_diff(got, want[i]) > kTolerance) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace il::server_test
