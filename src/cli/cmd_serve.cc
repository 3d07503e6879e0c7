// `inferencelayer serve`: the HTTP server (TEI- and OpenAI-compatible routes; see src/server/).
// Every option can also come from an IL_* environment variable (named in --help); the command
// line wins. The first stdout line is "listening on http://HOST:PORT" once the socket is bound,
// so scripts using --port 0 can read the port. SIGTERM / SIGINT: stop accepting, answer every
// request already received, exit 0; a second signal, or --shutdown-timeout, closes what is left
// and exits 1.
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "cli/cli_common.h"
#include "core/error.h"
#include "server/allocator.h"
#include "server/server.h"

namespace il::cli {
namespace {

// Blocks SIGTERM / SIGINT in this thread and every thread it starts afterwards, so that only
// the signal thread (sigwait) sees them and the shutdown runs outside a signal handler.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

EngineOptions engine_options(const server::ServeOptions& o) {
  EngineOptions options;
  options.device = o.device;
  options.dtype = o.dtype;
  options.max_batch_tokens = o.max_batch_tokens;
  options.threads = o.threads;
  // Two lanes by default: on a GPU a second pass in flight fills what one small pass leaves idle
  // (the CPU executor offers one lane whatever is asked).
  options.lanes = o.lanes > 0 ? o.lanes : 2;
  options.kv_cache_tokens = o.kv_cache_tokens;
  options.kv_page_size = o.kv_page_size;
  options.prefill_tokens_per_step = o.prefill_tokens_per_step;
  return options;
}

// --config: random weights of a real model's shape, for load tests of a large model.
std::unique_ptr<Engine> load_random_engine(const server::ServeOptions& o) {
  std::filesystem::path config(o.config), tok(o.tokenizer);
  if (std::filesystem::is_directory(config)) config /= "config.json";
  if (!std::filesystem::exists(config)) throw UsageError("config " + config.string() + " does not exist");
  if (!tok.empty() && std::filesystem::is_directory(tok)) tok /= "tokenizer.json";
  if (!tok.empty() && !std::filesystem::exists(tok)) throw UsageError("tokenizer " + tok.string() + " does not exist");
  auto engine = Engine::load_random(config, tok, engine_options(o));
  std::fprintf(stderr, "note: random weights from %s: answers carry no meaning (a load-test model)%s\n", config.string().c_str(),
               tok.empty() ? "; no tokenizer: token-id inputs only" : "");
  return engine;
}

// load_engine's checks, plus the device (the other subcommands run on the CPU).
std::unique_ptr<Engine> load_serving_engine(const server::ServeOptions& o) {
  if (o.model.empty() == o.config.empty()) throw UsageError("give exactly one of --model DIR or --config FILE");
  if (!o.config.empty()) return load_random_engine(o);
  const std::filesystem::path dir(o.model);
  if (!std::filesystem::is_directory(dir)) throw UsageError("model folder " + o.model + " does not exist or is not a folder");
  if (!std::filesystem::exists(dir / "config.json")) throw UsageError("model folder " + o.model + " has no config.json");
  auto engine = Engine::load(dir, engine_options(o));
  if (engine->info().random_weights)
    std::fprintf(stderr, "note: %s holds random weights (a demo/test model): its vectors carry no meaning\n", o.model.c_str());
  return engine;
}

// A server holds a descriptor per connection: raise the soft limit to the hard one, and keep
// --max-connections under it (with room for the model's files and the listening socket), so
// that running out of descriptors is a 503 for a client rather than a failure inside the server.
void fit_connections_to_descriptors(server::ServeOptions& o) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  constexpr rlim_t kReserve = 64;
  const rlim_t usable = limit.rlim_cur > kReserve ? limit.rlim_cur - kReserve : 1;
  if (limit.rlim_cur != RLIM_INFINITY && o.max_connections > usable) {
    std::fprintf(stderr, "note: --max-connections %zu lowered to %llu (the open-file limit is %llu)\n",
                 o.max_connections, static_cast<unsigned long long>(usable),
                 static_cast<unsigned long long>(limit.rlim_cur));
    o.max_connections = static_cast<std::size_t>(usable);
  }
}

void run_serve(server::ServeOptions o) {
  if (o.port < 0 || o.port > 65535) throw UsageError("--port must be between 0 and 65535");
  const sigset_t stop_signals = block_stop_signals();
  server::tune_allocator_for_serving();
  fit_connections_to_descriptors(o);
  server::Server srv(o, load_serving_engine(o));
  const int port = srv.bind();
  std::printf("listening on http://%s:%d\n", o.host.c_str(), port);
  std::fflush(stdout);

  std::atomic<bool> finished{false}, aborted{false};
  std::atomic<std::size_t> abandoned{0};
  std::thread signals([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (finished.load()) return;  // woken by run() ending on its own
    std::fprintf(stderr, "inferencelayer serve: %s: answering the requests received (%zu), then exiting\n",
                 sig == SIGINT ? "SIGINT" : "SIGTERM", srv.unanswered());
    srv.stop();
    // Until everything is answered: a second signal or the deadline closes what is left.
    const timespec deadline{o.shutdown_timeout, 0};
    siginfo_t info{};
    const int second = sigtimedwait(&stop_signals, &info, &deadline);
    if (finished.load()) return;
    abandoned = srv.unanswered();
    aborted = true;
    std::fprintf(stderr, "inferencelayer serve: %s: closing %zu unanswered request(s)\n",
                 second > 0 ? "second signal" : "--shutdown-timeout reached", abandoned.load());
    srv.abort();
  });
  srv.run();
  // run() may also end without a signal: wake the signal thread.
  finished = true;
  pthread_kill(signals.native_handle(), SIGTERM);
  signals.join();
  if (aborted) throw Error("stopped with " + std::to_string(abandoned.load()) + " request(s) unanswered");
}

}  // namespace

Command add_serve_command(CLI::App& app) {
  auto o = std::make_shared<server::ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve a model over HTTP (text-embeddings-inference and OpenAI routes)");
  cmd->footer(
      "Routes: POST /embed /embed_all /similarity /rerank /predict /tokenize /decode\n"
      "        /v1/embeddings (OpenAI) /v1/rerank (Cohere / Jina); GET /info /health /metrics.\n"
      "Errors are {\"error\": ..., \"error_type\": ...} with 400 (malformed HTTP), 401 (API key), 404, 405\n"
      "(method), 413 (payload), 415 (not JSON), 422 (input), 424 (the model cannot serve the route),\n"
      "429 (over --max-concurrent-requests, with Retry-After), 431 (headers), 503 (over --max-connections,\n"
      "or out of memory for that request).\n"
      "Every option also reads the environment variable named with it; the command line wins.\n"
      "Examples:\n"
      "  inferencelayer serve -m ./bge-small --port 8080\n"
      "  curl -s localhost:8080/embed -H 'Content-Type: application/json' -d '{\"inputs\": \"hello\"}'");
  cmd->add_option("-m,--model", o->model, "Hugging Face model folder")->envname("IL_MODEL");
  cmd->add_option("--config", o->config,
                  "Instead of --model: a config.json (or folder) served with random weights, for load tests")
      ->envname("IL_CONFIG");
  cmd->add_option("--tokenizer", o->tokenizer, "With --config: the tokenizer.json (or a folder holding one, whose chat template the chat route uses)")
      ->envname("IL_TOKENIZER");
  cmd->add_option("--host", o->host, "Address to listen on")->capture_default_str()->envname("IL_HOST");
  cmd->add_option("--port", o->port, "Port (0 = any free port; the first stdout line names it)")
      ->capture_default_str()->envname("IL_PORT");
  cmd->add_option("--api-key", o->api_key, "Require 'Authorization: Bearer KEY' on the POST routes")
      ->envname("IL_API_KEY");
  cmd->add_option("--max-batch-tokens", o->max_batch_tokens, "Real tokens per forward pass (ragged, no padding)")
      ->capture_default_str()->check(CLI::PositiveNumber)->envname("IL_MAX_BATCH_TOKENS");
  cmd->add_option("--max-batch-requests", o->max_batch_requests, "Sequences per forward pass (0 = no limit)")
      ->capture_default_str()->envname("IL_MAX_BATCH_REQUESTS");
  cmd->add_option("--max-concurrent-requests", o->max_concurrent_requests,
                  "Requests served at once; more are refused with 429 and Retry-After")
      ->capture_default_str()->check(CLI::PositiveNumber)->envname("IL_MAX_CONCURRENT_REQUESTS");
  cmd->add_option("--max-client-batch-size", o->max_client_batch_size, "Inputs per request (more: 422)")
      ->capture_default_str()->check(CLI::PositiveNumber)->envname("IL_MAX_CLIENT_BATCH_SIZE");
  cmd->add_option("--payload-limit", o->payload_limit, "Request body bytes (more: 413)")
      ->capture_default_str()->check(CLI::PositiveNumber)->envname("IL_PAYLOAD_LIMIT");
  cmd->add_option("--keep-alive-timeout", o->keep_alive_timeout,
                  "Seconds an idle connection stays open (behind a load balancer: more than its idle timeout)")
      ->capture_default_str()->check(CLI::Range(1, 3600))->envname("IL_KEEP_ALIVE_TIMEOUT");
  cmd->add_option("--header-timeout", o->header_timeout,
                  "Seconds a request's head may take, from its first byte (slow clients are closed)")
      ->capture_default_str()->check(CLI::Range(1, 3600))->envname("IL_HEADER_TIMEOUT");
  cmd->add_option("--request-timeout", o->request_timeout,
                  "Seconds a request body may take to arrive, and each answer to be sent")
      ->capture_default_str()->check(CLI::Range(1, 3600))->envname("IL_REQUEST_TIMEOUT");
  cmd->add_option("--max-connections", o->max_connections,
                  "Open connections at once; more are answered 503 and closed")
      ->capture_default_str()->check(CLI::PositiveNumber)->envname("IL_MAX_CONNECTIONS");
  cmd->add_option("--shutdown-timeout", o->shutdown_timeout,
                  "Seconds SIGTERM waits for the requests received before closing them (a second signal: at once)")
      ->capture_default_str()->check(CLI::Range(0, 86400))->envname("IL_SHUTDOWN_TIMEOUT");
  cmd->add_flag("--reuse-port", o->reuse_port,
                "Share the port with other processes (SO_REUSEPORT); without it a port in use is an error")
      ->envname("IL_REUSE_PORT");
  cmd->add_option("--http-threads", o->http_threads, "Event-loop threads for connections (not per connection)")
      ->capture_default_str()->check(CLI::Range(1, 64))->envname("IL_HTTP_THREADS");
  cmd->add_flag("--auto-truncate", o->auto_truncate,
                "Truncate over-long inputs when a request does not say (default: refuse them with 422)")
      ->envname("IL_AUTO_TRUNCATE");
  cmd->add_option("--device", o->device, "cpu, cuda, cuda:N or auto")->capture_default_str()->envname("IL_DEVICE");
  cmd->add_option("--dtype", o->dtype, "Compute precision: f32, f16, bf16 (CUDA only) or auto")
      ->capture_default_str()->check(CLI::IsMember({"auto", "f32", "f16", "bf16"}))->envname("IL_DTYPE");
  cmd->add_option("--lanes", o->lanes,
                  "Encoder forward passes in flight at once on a GPU, each with its own stream and scratch over "
                  "one copy of the weights (0 = 2; the CPU runs one)")
      ->capture_default_str()->check(CLI::Range(0, 16))->envname("IL_LANES");
  cmd->add_option("--threads", o->threads, "Compute threads (0 = one per hardware thread)")
      ->capture_default_str()->envname("IL_THREADS");
  cmd->add_option("--tokenization-workers", o->tokenization_workers, "Tokenizer threads (0 = a quarter of the hardware threads, 2 to 8; bodies up to 1 KiB are tokenized on the event loop)")
      ->capture_default_str()->envname("IL_TOKENIZATION_WORKERS");
  cmd->add_option("--image-workers", o->image_workers, "Image decoding and preprocessing threads of an image model (0 = one per hardware thread)")
      ->capture_default_str()->envname("IL_IMAGE_WORKERS");
  cmd->add_option("--served-model-name", o->served_model_name, "Model name in /info and OpenAI answers (default: the folder name)")
      ->envname("IL_SERVED_MODEL_NAME");
  cmd->add_option("--kv-cache-tokens", o->kv_cache_tokens,
                  "Generating models: KV cache budget in tokens shared by the requests in flight (0 = 8192 on the "
                  "CPU, 131072 on a GPU)")
      ->capture_default_str()->envname("IL_KV_CACHE_TOKENS");
  cmd->add_option("--kv-page-size", o->kv_page_size, "Generating models: tokens per KV cache page")
      ->capture_default_str()->check(CLI::Range(1, 4096))->envname("IL_KV_PAGE_SIZE");
  cmd->add_option("--prefill-tokens-per-step", o->prefill_tokens_per_step,
                  "Generating models: prompt tokens plus image patches one step prefills while other requests "
                  "decode, bounding their inter-token latency (a longer prompt goes in chunks; 0 = no bound)")
      ->capture_default_str()->envname("IL_PREFILL_TOKENS_PER_STEP");
  cmd->add_option("--max-new-tokens-limit", o->max_new_tokens_limit,
                  "Generating models: the most tokens one request may ask for (max_tokens above it: 422)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 24))->envname("IL_MAX_NEW_TOKENS_LIMIT");
  cmd->add_option("--max-images-per-request", o->max_images_per_request,
                  "Generating models: images one chat request may hold (more: 413)")
      ->capture_default_str()->check(CLI::Range(0, 1024))->envname("IL_MAX_IMAGES_PER_REQUEST");
  cmd->add_flag("--fetch-image-urls", o->url_fetch.enabled,
                "Fetch http(s) URLs given as images (default: refused; only data: URIs and base64 are read)")
      ->envname("IL_FETCH_IMAGE_URLS");
  cmd->add_option("--fetch-url-hosts", o->url_fetch.hosts,
                  "With --fetch-image-urls: the only host names fetched from, redirects included (default: any)")
      ->delimiter(',')->envname("IL_FETCH_URL_HOSTS");
  cmd->add_option("--fetch-url-timeout", o->url_fetch.timeout_s, "Seconds one fetch may take, redirects included")
      ->capture_default_str()->check(CLI::Range(1, 600))->envname("IL_FETCH_URL_TIMEOUT");
  cmd->add_option("--fetch-url-max-bytes", o->url_fetch.max_bytes, "Bytes one fetched image may have")
      ->capture_default_str()->check(CLI::PositiveNumber)->envname("IL_FETCH_URL_MAX_BYTES");
  return {cmd, [o] { run_serve(*o); }};
}

}  // namespace il::cli
