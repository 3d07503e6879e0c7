// Images through the server on SigLIP: /embed, /v1/embeddings and /embed_all with {"image": ...}
// items (data: URIs and bare base64), against transformers' embeddings of the fixture files
// (tests/fixtures/siglip-joint/expected_images.json) and the CLI's hidden states; refusals of
// URLs, bad base64 and broken images naming the item; and, on a random-weights joint config with
// a tokenizer, /image_text_scores against the embeddings the server gives for the same inputs
// (logit = exp(logit_scale) · cos + logit_bias, probability its sigmoid) and mixed image / text
// batches answered in the request's order.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "server_test_util.h"

namespace il::server_test {
namespace {

constexpr double kTol = 2e-5;  // the vision tower's parity tolerance (tests/oracle/siglip_test.cc)

std::filesystem::path fixtures() { return cli_test::fixture_dir("siglip-joint").parent_path(); }

std::vector<float> unit(std::vector<float> v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  for (float& x : v) x = static_cast<float>(x / std::sqrt(s));
  return v;
}

json expected_images() {
  std::ifstream in(fixtures() / "siglip-joint" / "expected_images.json");
  return json::parse(in);
}

class SiglipRoutes : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess("siglip-joint", {"--image-workers", "3"}); }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->terminate(), 0);
    delete server_;
  }
  void SetUp() override { ASSERT_TRUE(server_->started()); }
  static ServerProcess* server_;
};
ServerProcess* SiglipRoutes::server_ = nullptr;

TEST_F(SiglipRoutes, EmbedAndOpenAiGiveTransformersImageEmbeddings) {
  const json e = expected_images();
  json items = json::array();
  for (std::size_t i = 0; i < e["images"].size(); ++i) {
    const std::string b64 = base64_file(fixtures() / e["images"][i]["file"].get<std::string>());
    items.push_back({{"image", i % 2 ? b64 : "data:image/x;base64," + b64}});
  }
  auto c = server_->client();
  const json raw = body_of(post(c, "/embed", {{"inputs", items}, {"normalize", false}}));
  ASSERT_EQ(raw.size(), items.size());
  for (std::size_t i = 0; i < raw.size(); ++i)
    EXPECT_LE(max_abs_diff(raw[i].get<std::vector<float>>(), e["images"][i]["embedding"].get<std::vector<float>>()),
              kTol)
        << e["images"][i]["file"];
  const json oa = body_of(post(c, "/v1/embeddings", {{"input", items[0]}}));
  ASSERT_EQ(oa["data"].size(), 1u);
  EXPECT_LE(max_abs_diff(oa["data"][0]["embedding"].get<std::vector<float>>(),
                         unit(e["images"][0]["embedding"].get<std::vector<float>>())),
            kTol);
  const json info = body_of(c.Get("/info"));
  EXPECT_EQ(info["image"]["height"], 32);
  EXPECT_EQ(info["image"]["image_workers"], 3);
  EXPECT_EQ(info["image"]["fetch_image_urls"], false);
  const auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST_F(SiglipRoutes, EmbedAllGivesTheCliHiddenStates) {
  const std::filesystem::path file = fixtures() / "images" / "jpeg_exif_6.jpg";
  auto c = server_->client();
  const json h = body_of(post(c, "/embed_all", {{"inputs", json::array({{{"image", base64_file(file)}}})}}));
  const auto r = cli_test::run_cli(cli_test::cli_args({"embed", "--model", fixture_path("siglip-joint"), "--device", "cpu",
                                             "--output-kind", "hidden", "--image", file.string()}));
  ASSERT_EQ(r.status, 0) << r.err;
  const json want = json::parse(r.lines().at(0))["hidden"];
  ASSERT_EQ(h.size(), 1u);
  ASSERT_EQ(h[0].size(), want.size());
  for (std::size_t t = 0; t < want.size(); ++t)
    EXPECT_LE(max_abs_diff(h[0][t].get<std::vector<float>>(), want[t].get<std::vector<float>>()), 1e-6);
}

TEST_F(SiglipRoutes, BadImagesAre422NamingTheItem) {
  auto c = server_->client();
  const std::string good = base64_file(fixtures() / "images" / "png_p8.png");
  const std::string broken = base64_file(fixtures() / "images" / "png_truncated.png");
  const auto error_of = [&](const json& items) {
    const auto r = post(c, "/embed", {{"inputs", items}});
    expect_error(r, 422, "Validation");
    return r ? json::parse(r->body)["error"].get<std::string>() : std::string();
  };
  EXPECT_NE(error_of(json::array({{{"image", "https://example.com/cat.jpg"}}})).find("fetches no URLs"),
            std::string::npos);
  EXPECT_NE(error_of(json::array({{{"image", good}}, {{"image", "%%%"}}})).find("item 1"), std::string::npos);
  EXPECT_NE(error_of(json::array({{{"image", good}}, {{"image", broken}}})).find("'inputs' item 1"), std::string::npos);
  EXPECT_NE(error_of(json::array({{{"image", "data:image/png,abc"}}})).find("base64"), std::string::npos);
  // A vision-only question on a folder without a tokenizer is still answered for images after it.
  const json ok = body_of(post(c, "/embed", {{"inputs", json::array({{{"image", good}}})}}));
  EXPECT_EQ(ok.size(), 1u);
}

// A joint config with random weights and a tokenizer: texts and images in one request.
class SiglipScores : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                     ("il_siglip_scores_" + std::to_string(::getpid())));
    std::filesystem::create_directories(*dir_);
    const json cfg = {
        {"model_type", "siglip"},
        {"text_config", {{"vocab_size", 800}, {"hidden_size", 32}, {"intermediate_size", 40}, {"num_hidden_layers", 1},
                         {"num_attention_heads", 2}, {"max_position_embeddings", 24}, {"pad_token_id", 3}}},
        {"vision_config", {{"hidden_size", 32}, {"intermediate_size", 40}, {"num_hidden_layers", 1},
                           {"num_attention_heads", 2}, {"image_size", 32}, {"patch_size", 8}}}};
    std::ofstream(*dir_ / "config.json") << cfg.dump();
    server_ = new ServerProcess("", {"--config", (*dir_ / "config.json").string(), "--tokenizer",
                                     fixture_path("bert-mean")});
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->terminate(), 0);
    delete server_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override { ASSERT_TRUE(server_->started()); }
  static ServerProcess* server_;
  static std::filesystem::path* dir_;
};
ServerProcess* SiglipScores::server_ = nullptr;
std::filesystem::path* SiglipScores::dir_ = nullptr;

TEST_F(SiglipScores, PairLogitsAreScaledCosinesOfTheEmbeddings) {
  auto c = server_->client();
  const std::vector<std::string> images = {base64_file(fixtures() / "images" / "jpeg_420_big.jpg"),
                                           base64_file(fixtures() / "images" / "webp_lossy.webp")};
  const std::vector<std::string> texts = {"a photo of a cat", "a page of text", "x"};
  const json scores = body_of(post(c, "/image_text_scores", {{"images", images}, {"texts", texts}}));
  const json info = body_of(c.Get("/info"));
  const double scale = std::exp(info["image"]["logit"]["scale"].get<double>());
  const double bias = info["image"]["logit"]["bias"].get<double>();
  // Mixed: texts and images in one /embed request, answered in order.
  const json mixed = body_of(post(c, "/embed", {{"inputs", json::array({texts[0], {{"image", images[0]}}, {{"text", texts[1]}},
                                                                        {{"image", images[1]}}, texts[2]})}}));
  ASSERT_EQ(mixed.size(), 5u);
  const std::vector<std::vector<float>> img = {mixed[1].get<std::vector<float>>(), mixed[3].get<std::vector<float>>()};
  const std::vector<std::vector<float>> txt = {mixed[0].get<std::vector<float>>(), mixed[2].get<std::vector<float>>(),
                                               mixed[4].get<std::vector<float>>()};
  // Each item alone gives the same vector as in the mixed batch.
  EXPECT_LE(max_abs_diff(body_of(post(c, "/embed", {{"inputs", texts[1]}}))[0].get<std::vector<float>>(), txt[1]), 1e-6);
  EXPECT_LE(max_abs_diff(body_of(post(c, "/embed", {{"inputs", {{"image", images[1]}}}}))[0].get<std::vector<float>>(),
                         img[1]),
            1e-6);
  ASSERT_EQ(scores["logits"].size(), 2u);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j) {
      double dot = 0;
      for (std::size_t k = 0; k < img[i].size(); ++k) dot += static_cast<double>(img[i][k]) * txt[j][k];
      const double logit = scale * dot + bias;
      EXPECT_NEAR(scores["logits"][i][j].get<double>(), logit, 1e-4 * std::max(1.0, std::abs(logit)));
      EXPECT_NEAR(scores["probabilities"][i][j].get<double>(), 1.0 / (1.0 + std::exp(-logit)), 1e-5);
    }
  expect_error(post(c, "/image_text_scores", {{"images", images}}), 422, "Validation");
  expect_error(post(c, "/image_text_scores", {{"images", images}, {"texts", texts}, {"top_k", 1}}), 422, "Validation");
}

// A folder as google/siglip checkpoints ship it (spiece.model, no tokenizer.json): texts embed
// as transformers gives them through SiglipTokenizer (tests/fixtures/siglip-spm-joint), texts
// over 64 tokens are cut with "truncate": true and refused otherwise, and what needs a
// tokenizer.json (byte offsets) is refused saying why.
TEST(SiglipSpmRoutes, TextsEmbedThroughSpieceModel) {
  ServerProcess server("siglip-spm-joint");
  ASSERT_TRUE(server.started());
  std::ifstream in(fixtures() / "siglip-spm-joint" / "expected.json");
  const json e = json::parse(in);
  json texts = json::array();
  std::vector<std::vector<float>> want;
  std::string long_text;
  for (const auto& c : e["text_cases"]) {
    if (c["text"] == "") continue;  // refused
    texts.push_back(c["text"]);
    want.push_back(c["pooled"].get<std::vector<float>>());
    if (long_text.empty() && c["length"].get<std::size_t>() > 64) long_text = c["text"];
  }
  ASSERT_FALSE(long_text.empty());
  auto c = server.client();
  const json raw = body_of(post(c, "/embed", {{"inputs", texts}, {"normalize", false}, {"truncate", true}}));
  ASSERT_EQ(raw.size(), texts.size());
  for (std::size_t i = 0; i < raw.size(); ++i)
    EXPECT_LE(max_abs_diff(raw[i].get<std::vector<float>>(), want[i]), kTol) << texts[i].dump();
  const json oa = body_of(post(c, "/v1/embeddings", {{"input", texts[0]}}));
  EXPECT_LE(max_abs_diff(oa["data"][0]["embedding"].get<std::vector<float>>(),
                         unit(want[0])),
            kTol);
  const auto too_long = post(c, "/embed", {{"inputs", long_text}, {"truncate", false}});
  expect_error(too_long, 422, "Tokenizer");
  if (too_long) {
    EXPECT_NE(too_long->body.find("more than the maximum of 64"), std::string::npos) << too_long->body;
  }
  const auto tokenize = post(c, "/tokenize", {{"inputs", "a photo"}});
  expect_error(tokenize, 422, "Tokenizer");
  if (tokenize) {
    EXPECT_NE(tokenize->body.find("spiece.model"), std::string::npos) << tokenize->body;
  }
  EXPECT_EQ(server.terminate(), 0);
}

// An http server in the test process serving a fixture image: /img.png, /moved (a redirect to
// it), /loop (a redirect to itself); anything else is 404.
class ImageHost {
 public:
  explicit ImageHost(std::string bytes) {
    host_.Get("/img.png", [bytes](const httplib::Request&, httplib::Response& r) { r.set_content(bytes, "image/png"); });
    host_.Get("/moved", [](const httplib::Request&, httplib::Response& r) { r.set_redirect("/img.png"); });
    host_.Get("/loop", [](const httplib::Request&, httplib::Response& r) { r.set_redirect("/loop"); });
    // A byte every 300 ms, 20 of them: inside every read timeout, past a 2 s deadline.
    host_.Get("/slow", [](const httplib::Request&, httplib::Response& r) {
      r.set_chunked_content_provider("image/png", [](std::size_t offset, httplib::DataSink& sink) {
        if (offset >= 20) {
          sink.done();
          return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        return sink.write("x", 1);
      });
    });
    port_ = host_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { host_.listen_after_bind(); });
  }
  ~ImageHost() {
    host_.stop();
    thread_.join();
  }
  std::string url(const std::string& path, const std::string& name = "127.0.0.1") const {
    return "http://" + name + ":" + std::to_string(port_) + path;
  }

 private:
  httplib::Server host_;
  int port_ = 0;
  std::thread thread_;
};

std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// serve --fetch-image-urls: an image given by URL (directly or through a redirect) embeds exactly
// as its bytes sent in the body; failed fetches are 422 naming the item, the URL and the cause.
TEST(SiglipImageUrls, FetchedImagesEmbedAsTheirBytes) {
  const std::filesystem::path png = fixtures() / "images" / "png_p8.png";
  ImageHost host(file_bytes(png));
  ServerProcess server("siglip-joint", {"--fetch-image-urls"});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const json inline_item = {{"image", base64_file(png)}};
  const json want = body_of(post(c, "/embed", {{"inputs", json::array({inline_item})}}));
  ASSERT_EQ(want.size(), 1u);
  for (const std::string path : {"/img.png", "/moved"}) {
    const json got = body_of(post(c, "/embed", {{"inputs", json::array({{{"image", host.url(path)}}})}}));
    ASSERT_EQ(got.size(), 1u) << path;
    EXPECT_EQ(got[0], want[0]) << path;
  }
  const json oa = body_of(post(c, "/v1/embeddings", {{"input", {{"image", host.url("/img.png")}}}}));
  ASSERT_EQ(oa["data"].size(), 1u);
  const auto error_of = [&](const std::string& url) {
    const auto r = post(c, "/embed", {{"inputs", json::array({inline_item, {{"image", url}}})}});
    expect_error(r, 422, "Validation");
    return r ? json::parse(r->body)["error"].get<std::string>() : std::string();
  };
  const std::string missing = error_of(host.url("/missing.png"));
  EXPECT_NE(missing.find("item 1"), std::string::npos) << missing;
  EXPECT_NE(missing.find("HTTP 404"), std::string::npos) << missing;
  EXPECT_NE(error_of(host.url("/loop")).find("redirects more than"), std::string::npos);
  EXPECT_NE(error_of("ftp://127.0.0.1/img.png").find("base64"), std::string::npos);  // not a URL we fetch
  EXPECT_NE(error_of("http://127.0.0.1:1/img.png").find("could not be fetched"), std::string::npos);
  EXPECT_EQ(server.terminate(), 0);
}

// --fetch-url-hosts, --fetch-url-max-bytes and --fetch-url-timeout bound what is fetched.
TEST(SiglipImageUrls, HostsAndSizeAreBounded) {
  ImageHost host(file_bytes(fixtures() / "images" / "png_p8.png"));
  ServerProcess server("siglip-joint", {"--fetch-image-urls", "--fetch-url-hosts", "127.0.0.1", "--fetch-url-max-bytes",
                                        "100", "--fetch-url-timeout", "2"});
  ASSERT_TRUE(server.started());
  auto c = server.client();
  const auto error_of = [&](const std::string& url) {
    const auto r = post(c, "/embed", {{"inputs", json::array({{{"image", url}}})}});
    expect_error(r, 422, "Validation");
    return r ? json::parse(r->body)["error"].get<std::string>() : std::string();
  };
  EXPECT_NE(error_of(host.url("/img.png", "localhost")).find("names host localhost, which --fetch-url-hosts"),
            std::string::npos);
  EXPECT_NE(error_of(host.url("/img.png")).find("larger than 100 bytes"), std::string::npos);
  EXPECT_NE(error_of(host.url("/slow")).find("not fetched within 2 s"), std::string::npos);
  const json info = body_of(c.Get("/info"));
  EXPECT_EQ(info["image"]["fetch_image_urls"], true);
  EXPECT_EQ(info["image"]["fetch_url_hosts"], json::array({"127.0.0.1"}));
  EXPECT_EQ(server.terminate(), 0);
}

}  // namespace
}  // namespace il::server_test
