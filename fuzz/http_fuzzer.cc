// The server on one HTTP/1.1 request: the input is the raw bytes a client sends. They are read
// as a connection reads them (parse_request, the server's limits with a 64 KiB body), screened
// by the server's route table (404, 405, 415, 401) and handed to the route's handler, which
// parses and checks the JSON body and tokenizes; a ModelCall then runs on a real Batcher, as the
// server submits it, and its answer is written. Every request goes to three servers, built once:
//
//   demo/bert-random             embedding model (the CPU demo's): /embed, /embed_all,
//                                /similarity, /v1/embeddings (WordPiece)
//   tests/fixtures/bert-ce       one-label cross-encoder: /rerank, /v1/rerank, /predict;
//                                --auto-truncate
//   tests/fixtures/xlmr-ce2      three-label classifier: /predict's softmax (Unigram); an API
//                                key, "Authorization: Bearer fuzz-key"
//
// and /tokenize, /decode, /info, /health, /metrics on each. Expected outcomes: a refusal by the
// parser or the route table, an ApiError of status 4xx from a handler or an answer (what the
// server sends as such), or an answer. Findings, besides crashes and sanitizer reports: any other
// exception (the server would answer 500 "internal error" to a client's mistake), a 5xx, a job
// that the engine failed on inputs the handler accepted, and a 200 whose JSON body does not parse.
//
// Mutations keep Content-Length true to the body most of the time (LLVMFuzzerCustomMutator), so
// that the fuzzer explores the JSON bodies rather than framing alone; the input stays the raw
// request, so a finding replays as it is.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferencelayer/engine.h"
#include "server/api_error.h"
#include "server/batcher.h"
#include "server/context.h"
#include "server/http_request.h"
#include "server/metrics.h"
#include "server/route_table.h"
#include "server/routes.h"
#include "server/worker_pool.h"

namespace {

using namespace il::server;

constexpr std::size_t kBodyLimit = 64 * 1024;
constexpr std::size_t kBatchTokens = 256;  // a 32-input request of 64 tokens runs in 8 passes

// One server as Server::Impl wires it, without the transport.
struct Served {
  Served(const std::string& folder, const std::string& name, ServeOptions o)
      : options(std::move(o)),
        engine(load(folder)),
        workers(1),
        image_workers(1),
        batcher(*engine, options.max_batch_tokens, options.max_batch_requests, metrics),
        ctx{options, *engine, metrics, workers, image_workers, batcher, name} {
    add_embed_routes(routes, ctx);
    add_openai_routes(routes, ctx);
    add_rerank_routes(routes, ctx);
    add_token_routes(routes, ctx);
    add_info_routes(routes, ctx);
  }

  static std::unique_ptr<il::Engine> load(const std::string& folder) {
    il::EngineOptions e;
    e.device = "cpu";
    e.threads = 1;
    e.max_batch_tokens = kBatchTokens;
    return il::Engine::load(folder, e);
  }

  ServeOptions options;
  std::unique_ptr<il::Engine> engine;
  Metrics metrics;
  WorkerPool workers;
  WorkerPool image_workers;  // the folders fuzzed take no images: idle
  Batcher batcher;
  Context ctx;
  RouteTable routes;
};

ServeOptions serve_options() {
  ServeOptions o;
  o.max_batch_tokens = kBatchTokens;
  o.payload_limit = kBodyLimit;
  o.threads = 1;
  o.tokenization_workers = 1;
  return o;
}

// Built once and never destroyed: the batchers' threads run until the process exits.
const std::vector<Served*>& servers() {
  static const std::vector<Served*> all = [] {
    const std::string root = IL_FUZZ_SOURCE_DIR;
    ServeOptions embed = serve_options();
    ServeOptions rerank = serve_options();
    rerank.auto_truncate = true;
    ServeOptions classify = serve_options();
    classify.api_key = "fuzz-key";
    return std::vector<Served*>{
        new Served(root + "/demo/bert-random", "bert-random", embed),
        new Served(root + "/tests/fixtures/bert-ce", "bert-ce", rerank),
        new Served(root + "/tests/fixtures/xlmr-ce2", "xlmr-ce2", classify)};
  }();
  return all;
}

HttpLimits limits() {
  HttpLimits l;  // the server's defaults
  l.body_bytes = kBodyLimit;
  return l;
}

// IL_HTTP_FUZZER_VERBOSE=1: each answer's status and the start of its body on stderr.
bool verbose() {
  static const bool on = std::getenv("IL_HTTP_FUZZER_VERBOSE") != nullptr;
  return on;
}

[[noreturn]] void finding(const Served& s, const HttpRequest& req, const std::string& what) {
  std::fprintf(stderr, "http_fuzzer: %s %s on %s: %s\n", req.method.substr(0, 16).c_str(),
               req.path.substr(0, 64).c_str(), s.ctx.model_name.c_str(), what.c_str());
  std::abort();
}

void check_answer(const Served& s, const HttpRequest& req, const HttpResponse& res) {
  if (res.status >= 500) finding(s, req, "status " + std::to_string(res.status) + ": " + res.body);
  if (res.status == 200 && res.content_type == "application/json" &&
      !nlohmann::json::accept(res.body)) {
    finding(s, req, "a 200 whose body is not JSON: " + res.body.substr(0, 200));
  }
}

// What ApiError the server turns into its answer; anything else escaping is a finding.
template <typename F>
bool attempt(const Served& s, const HttpRequest& req, HttpResponse& res, F stage) {
  try {
    stage();
    return true;
  } catch (const ApiError& e) {
    res = error_response(e.status(), e.type(), e.what());
  } catch (const std::exception& e) {
    finding(s, req, std::string("exception escaped: ") + e.what());
  }
  return false;
}

void serve(Served& s, const HttpRequest& req) {
  if (const auto refusal = s.routes.screen(req, s.options.api_key)) {
    check_answer(s, req, *refusal);
    if (verbose()) {
      std::fprintf(stderr, "%s %s on %s: %d (screened)\n", req.method.substr(0, 16).c_str(),
                   req.path.substr(0, 64).c_str(), s.ctx.model_name.c_str(), refusal->status);
    }
    return;
  }
  const Route* route = s.routes.find(req);
  if (route == nullptr) finding(s, req, "screened through without a route");
  HttpResponse res;
  Timings timings;
  std::optional<ModelCall> call;
  if (attempt(s, req, res, [&] { call = route->handler(req, res, timings); }) && call) {
    auto job = std::make_shared<Job>();
    job->kind = call->kind;
    job->inputs = std::move(call->inputs);
    s.batcher.submit(job).get();
    timings.queue_ms = job->queue_ms;
    timings.inference_ms = job->inference_ms;
    if (!job->error.empty()) finding(s, req, "the job failed: " + job->error);
    attempt(s, req, res, [&] { call->answer(*job, res, timings); });
  }
  if (res.status < 400) set_timing_headers(res, timings, s.engine->info().backend);
  check_answer(s, req, res);
  if (verbose()) {
    std::fprintf(stderr, "%s %s on %s: %d %s\n", req.method.substr(0, 16).c_str(),
                 req.path.substr(0, 64).c_str(), s.ctx.model_name.c_str(), res.status,
                 res.body.substr(0, 160).c_str());
  }
}

// The first "Content-Length:" of the head (case-insensitive): where its value starts and ends.
std::optional<std::pair<std::size_t, std::size_t>> content_length_field(std::string_view head) {
  static constexpr std::string_view kName = "\r\ncontent-length:";
  for (std::size_t i = 0; i + kName.size() <= head.size(); ++i) {
    bool same = true;
    for (std::size_t k = 0; k < kName.size() && same; ++k) {
      same = std::tolower(static_cast<unsigned char>(head[i + k])) == kName[k];
    }
    if (!same) continue;
    std::size_t begin = i + kName.size();
    while (begin < head.size() && head[begin] == ' ') ++begin;
    std::size_t end = begin;
    while (end < head.size() && std::isdigit(static_cast<unsigned char>(head[end]))) ++end;
    return std::make_pair(begin, end);
  }
  return std::nullopt;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  servers();
  return 0;
}

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size,
                                        std::size_t max_size);

// libFuzzer's own mutation, then, 7 times in 8, the Content-Length value set to the body's size.
extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
  size = LLVMFuzzerMutate(data, size, max_size);
  if (seed % 8 == 0) return size;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::size_t head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string_view::npos) return size;
  const auto field = content_length_field(bytes.substr(0, head_end));
  if (!field) return size;
  const std::string length = std::to_string(size - head_end - 4);
  const auto [begin, end] = *field;
  const std::size_t new_size = size - (end - begin) + length.size();
  if (new_size > max_size) return size;
  std::memmove(data + begin + length.size(), data + end, size - end);
  std::memcpy(data + begin, length.data(), length.size());
  return new_size;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const HttpLimits kLimits = limits();
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const ParsedRequest parsed = parse_request(bytes, kLimits);
  if (parsed.refusal) {
    const HttpResponse res = refusal_response(*parsed.refusal);
    if (res.status < 400 || res.status >= 500 || !nlohmann::json::accept(res.body)) {
      std::fprintf(stderr, "http_fuzzer: refusal %d: %s\n", res.status, res.body.c_str());
      std::abort();
    }
    return 0;
  }
  if (!parsed.request) return 0;  // incomplete: a connection would wait for more
  for (Served* s : servers()) serve(*s, *parsed.request);
  return 0;
}
