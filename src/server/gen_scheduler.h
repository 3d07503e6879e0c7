// The step scheduler of a generating model. One thread owns the engine's generation API (the
// engine is not thread-safe for compute) and runs the continuous batch: between two decode steps
// it takes the requests that arrived (Engine::submit_generation: they join as the KV cache has
// room), drops those whose client left (their pages free at once), steps, and hands each new
// token to its request's callbacks. Prefill of newcomers runs inside a step, next to the decode
// of the others (runtime/generator.h).
//
// The callbacks run on the scheduler thread: they must be quick (format a chunk, queue it on a
// stream) and must not call back into the scheduler.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "inferencelayer/engine.h"
#include "server/metrics.h"

namespace il::server {

struct GenTask {
  GenerationRequest request;
  // On the scheduler thread: each new token with the text it completes; then exactly one of
  // on_done (the result) or on_error (status 422 for a request the engine refused, 499 when its
  // client left (client_gone), 500 for a failed step, 503 while shutting down).
  std::function<void(int32_t token, const std::string& text)> on_token;
  std::function<void(GenerationResult result)> on_done;
  std::function<void(int status, const std::string& message)> on_error;
  std::function<bool()> client_gone;  // may be empty
  std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();
};

class GenScheduler {
 public:
  GenScheduler(Engine& engine, Metrics& metrics);
  ~GenScheduler();
  GenScheduler(const GenScheduler&) = delete;
  GenScheduler& operator=(const GenScheduler&) = delete;

  // Thread-safe; the task is answered through its callbacks (after stop(): at once, 503).
  void submit(std::shared_ptr<GenTask> task);
  // Answers what is queued or running with 503 and joins the thread.
  void stop();
  // The latest load (updated every step).
  GenerationLoad load() const;
  // False once a step failed in a way the engine could not recover from.
  bool healthy() const { return healthy_.load(); }

 private:
  struct Active {
    std::shared_ptr<GenTask> task;
    std::chrono::steady_clock::time_point last_token;
    bool first = true;
  };
  void run();
  void admit_new();
  void drop_gone();
  void step();
  void publish_load();

  Engine& engine_;
  Metrics& metrics_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<GenTask>> inbox_;
  bool stopping_ = false;
  GenerationLoad load_;
  std::atomic<bool> healthy_{true};
  std::map<GenerationId, Active> active_;  // scheduler thread only
  std::thread thread_;
};

}  // namespace il::server
