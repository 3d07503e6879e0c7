#include "server/server.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <new>
#include <thread>
#include <vector>

#include "core/error.h"
#include "server/api_error.h"
#include "server/batcher.h"
#include "server/chat_prompt.h"
#include "server/gen_scheduler.h"
#include "server/context.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/route_table.h"
#include "server/routes.h"
#include "server/worker_pool.h"

namespace il::server {
namespace {

using Clock = std::chrono::steady_clock;

// Tokenization workers when --tokenization-workers is 0: a quarter of the hardware threads, 2 to
// 8. Short requests spend microseconds in them; more threads than that only compete with the
// inference thread, the event loop and the clients for the cores, and lengthen the round trip a
// request makes between two forward passes (H200, 64 clients of short requests, f32: 16 workers
// 6,789 req/s, 4 workers 7,179, 1 worker 6,336; docs/reliability.md).
std::size_t default_tokenizers(std::size_t n) {
  if (n) return n;
  const std::size_t hw = std::max(1u, std::thread::hardware_concurrency());
  return std::clamp<std::size_t>(hw / 4, 2, 8);
}

// Decoding and resizing an image is CPU work of milliseconds that parallelises perfectly: by
// default one thread per hardware thread (a model without images gets one idle thread).
std::size_t default_image_workers(std::size_t n, const Engine &engine) {
  const Capabilities &c = engine.info().capabilities;
  if (!c.image_input && !c.ocr) return 1;
  if (n) return n;
  return std::max(1u, std::thread::hardware_concurrency());
}

// A body this small is parsed and tokenized on the event loop itself (tens of microseconds):
// handing it to a worker would cost a queue and a wake-up on the path between two passes.
constexpr std::size_t kInlineBodyBytes = 1024;

std::string default_model_name(const ServeOptions &o) {
  if (!o.served_model_name.empty())
    return o.served_model_name;
  std::filesystem::path p(o.model.empty() ? o.config : o.model);
  if (p.extension() == ".json")
    return p.stem() == "config" ? p.parent_path().filename().string()
                                : p.stem().string();
  if (!p.has_filename())
    p = p.parent_path();
  return p.filename().string();
}

HttpOptions http_options(const ServeOptions &o) {
  HttpOptions h;
  h.host = o.host;
  h.port = o.port;
  h.reuse_port = o.reuse_port;
  h.io_threads = o.http_threads;
  h.limits.body_bytes = o.payload_limit;
  h.limits.idle_timeout = std::chrono::seconds(o.keep_alive_timeout);
  h.limits.header_timeout = std::chrono::seconds(o.header_timeout);
  h.limits.body_timeout = std::chrono::seconds(o.request_timeout);
  h.limits.max_connections = o.max_connections;
  return h;
}

} // namespace

struct Server::Impl final : HttpApp {
  // One request from screening to its answer.
  struct Exchange {
    const Route *route = nullptr;
    std::string path;
    HttpRequest request;
    Responder responder;
    HttpResponse response;
    Timings timings;
    Clock::time_point start = Clock::now();
  };

  Impl(const ServeOptions &o, std::unique_ptr<Engine> e)
      : options(o), engine(std::move(e)), http(http_options(o), *this),
        tokenizers(default_tokenizers(o.tokenization_workers)),
        image_workers(default_image_workers(o.image_workers, *engine)),
        batcher(*engine, o.max_batch_tokens, o.max_batch_requests, metrics),
        ctx{o, *engine, metrics, tokenizers, image_workers, batcher, default_model_name(o)} {
    metrics.set_http_counters(&http.counters());
    if (engine->info().capabilities.generate) {
      generation.emplace(*engine, metrics);
      ctx.generation = &*generation;
      // With --config (random weights), a --tokenizer folder's chat template, if it has one.
      ctx.chat_template = load_chat_template(!o.model.empty()                               ? o.model
                                             : std::filesystem::is_directory(o.tokenizer) ? o.tokenizer
                                                                                          : std::string());
    }
    add_generation_routes(routes, ctx);
    add_ocr_routes(routes, ctx);
    add_embed_routes(routes, ctx);
    add_openai_routes(routes, ctx);
    add_rerank_routes(routes, ctx);
    add_token_routes(routes, ctx);
    add_info_routes(routes, ctx);
  }

  // Decided on the head alone, before a body byte is read.
  std::optional<HttpResponse> screen(const HttpRequest &head) override {
    std::optional<HttpResponse> refusal = routes.screen(head, options.api_key);
    if (refusal && openai_generation_path(head.path)) to_openai_error(*refusal);
    return refusal;
  }

  void handle(HttpRequest request, Responder responder) override {
    auto ex = std::make_shared<Exchange>();
    ex->route = routes.find(request);
    ex->path = request.path;
    ex->request = std::move(request);
    ex->responder = std::move(responder);
    if (ex->route ==
        nullptr) { // screen() let it through: cannot happen, but never hang
      ex->response = error_response(404, "NotFound", "no such route");
      return ex->responder.respond(std::move(ex->response));
    }
    if (ex->route->compute) {
      // The limit counts requests being served, whatever their batch size.
      if (in_flight.fetch_add(1) >= options.max_concurrent_requests) {
        in_flight.fetch_sub(1);
        ex->response = error_response(
            429, "Overloaded",
            "too many concurrent requests (--max-concurrent-requests " +
                std::to_string(options.max_concurrent_requests) + ")");
        ex->response.set_header("Retry-After", "1");
        // The client is told to come back later: its connection ends, as a
        // retrying client would open a new one anyway.
        ex->response.close = true;
        count(*ex);
        return ex->responder.respond(std::move(ex->response));
      }
      metrics.add_in_flight(1);
    }
    if (ex->request.body.size() <= kInlineBodyBytes)
      return run_handler(ex);
    tokenizers.post([this, ex] { run_handler(ex); });
  }

  void run_handler(const std::shared_ptr<Exchange> &ex) {
    std::optional<ModelCall> call;
    attempt(*ex, [&] {
      call = ex->route->handler(ex->request, ex->response, ex->timings);
    });
    std::string().swap(
        ex->request
            .body); // parsed: its memory is not needed while the model runs
    if (call && !failed(*ex)) {
      if (call->start) return start(ex, std::move(call->start));
      return submit(ex, std::make_shared<ModelCall>(std::move(*call)));
    }
    finish(ex);
  }

  // A generation route answers through the responder itself (perhaps as a stream, long after
  // this returns) and tells when it has, with the status it answered.
  void start(const std::shared_ptr<Exchange> &ex,
             std::function<void(const Responder &, std::function<void(int)>)> begin) {
    auto once = std::make_shared<std::atomic<bool>>(false);
    auto finished = [this, ex, once](int status) {
      if (once->exchange(true)) return;
      ex->response.status = status;
      count(*ex);
      if (ex->route->compute) {
        in_flight.fetch_sub(1);
        metrics.add_in_flight(-1);
      }
    };
    bool started = false;
    attempt(*ex, [&] {
      begin(ex->responder, finished);
      started = true;
    });
    if (!started && !once->exchange(true)) finish(ex);
  }

  void submit(const std::shared_ptr<Exchange> &ex,
              std::shared_ptr<ModelCall> call) {
    auto job = std::make_shared<Job>();
    job->kind = call->kind;
    job->inputs = std::move(call->inputs);
    job->images = std::move(call->images);
    job->client_gone = [responder = ex->responder] {
      return responder.client_gone();
    };
    // Weak: the job must not own the callback that owns it. The batcher holds
    // the job while it calls on_done.
    job->on_done = [this, ex, call, weak = std::weak_ptr<Job>(job)] {
      if (auto done = weak.lock())
        tokenizers.post(
            [this, ex, call, done] { after_job(ex, *call, *done); });
    };
    // Only a submit that threw is finished here: once queued, the job may already have run and
    // its answer (even a failure, from another thread) belongs to after_job alone.
    bool queued = false;
    attempt(*ex, [&] {
      batcher.submit(job);
      queued = true;
    });
    if (!queued) finish(ex);
  }

  void after_job(const std::shared_ptr<Exchange> &ex, const ModelCall &call,
                 Job &job) {
    ex->timings.queue_ms = job.queue_ms;
    ex->timings.inference_ms = job.inference_ms;
    if (!job.error.empty())
      ex->response = error_response(call.failure_status, call.failure_type,
                                    call.failure_prefix + job.error);
    else
      attempt(*ex, [&] { call.answer(job, ex->response, ex->timings); });
    finish(ex);
  }

  static bool failed(const Exchange &ex) { return ex.response.status >= 400; }

  // Runs a stage of the request; what it throws becomes the answer.
  template <typename F> void attempt(Exchange &ex, F stage) {
    try {
      stage();
    } catch (const ApiError &e) {
      ex.response = error_response(e.status(), e.type(), e.what());
    } catch (const std::bad_alloc &) {
      // The machine is short of memory for this request; others (and this one,
      // later) may fit.
      ex.response = error_response(503, "Overloaded",
                                   "out of memory while serving " + ex.path);
      ex.response.set_header("Retry-After", "1");
    } catch (const std::exception &e) {
      ex.response = error_response(
          500, "Backend", "internal error on " + ex.path + ": " + e.what());
    }
  }

  void count(const Exchange &ex) {
    metrics.count_request(ex.path, ex.response.status);
    metrics.observe_request(
        std::chrono::duration<double>(Clock::now() - ex.start).count());
  }

  void finish(const std::shared_ptr<Exchange> &ex) {
    if (!failed(*ex))
      attempt(*ex, [&] {
        set_timing_headers(ex->response, ex->timings, engine->info().backend);
      });
    count(*ex);
    if (ex->route->compute) {
      in_flight.fetch_sub(1);
      metrics.add_in_flight(-1);
    }
    if (failed(*ex) && openai_generation_path(ex->path)) to_openai_error(ex->response);
    ex->responder.respond(std::move(ex->response));
  }

  // Declaration order is destruction order reversed: the batcher drains into
  // the workers, the workers answer through the transport, so the transport
  // outlives both.
  ServeOptions options;
  std::unique_ptr<Engine> engine;
  Metrics metrics;
  RouteTable routes;
  HttpServer http;
  WorkerPool tokenizers;
  WorkerPool image_workers;
  Batcher batcher;
  std::optional<GenScheduler> generation;  // generating models
  Context ctx;
  std::atomic<std::size_t> in_flight{0};
};

Server::Server(const ServeOptions &options, std::unique_ptr<Engine> engine)
    : impl_(std::make_unique<Impl>(options, std::move(engine))) {}

Server::~Server() = default;

int Server::bind() { return impl_->http.bind(); }

void Server::run() {
  impl_->http.run();
  if (impl_->generation) impl_->generation->stop();
  impl_->batcher.stop();
}

void Server::stop() { impl_->http.stop(); }

void Server::abort() {
  impl_->batcher.cancel_queued("the server is shutting down");
  if (impl_->generation) impl_->generation->stop();
  impl_->http.abort();
}

std::size_t Server::unanswered() const { return impl_->http.unanswered(); }

} // namespace il::server
