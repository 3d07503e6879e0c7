#include "server/gen_scheduler.h"

#include <exception>
#include <vector>

#include "core/error.h"

namespace il::server {

using Clock = std::chrono::steady_clock;

GenScheduler::GenScheduler(Engine& engine, Metrics& metrics) : engine_(engine), metrics_(metrics) {
  load_ = engine_.generation_load();
  publish_load();
  thread_ = std::thread([this] { run(); });
}

GenScheduler::~GenScheduler() { stop(); }

void GenScheduler::submit(std::shared_ptr<GenTask> task) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      inbox_.push_back(std::move(task));
      cv_.notify_one();
      return;
    }
  }
  if (task->on_error) task->on_error(503, "the server is shutting down");
}

void GenScheduler::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

GenerationLoad GenScheduler::load() const {
  std::lock_guard lock(mutex_);
  return load_;
}

void GenScheduler::publish_load() {
  const GenerationLoad l = engine_.generation_load();
  {
    std::lock_guard lock(mutex_);
    load_ = l;
  }
  metrics_.set_generation_load(l);
}

// The requests that arrived since the last step join the engine's queue (checked there: a bad
// one is answered now and never holds a page).
void GenScheduler::admit_new() {
  std::deque<std::shared_ptr<GenTask>> arrived;
  {
    std::lock_guard lock(mutex_);
    arrived.swap(inbox_);
  }
  for (auto& task : arrived) {
    if (task->client_gone && task->client_gone()) {
      metrics_.count_cancelled();
      if (task->on_error) task->on_error(499, "the client closed the connection");
      continue;
    }
    try {
      const std::size_t prompt = task->request.input_ids.size();
      const GenerationId id = engine_.submit_generation(std::move(task->request));
      metrics_.count_prompt_tokens(prompt);
      active_[id] = Active{std::move(task), Clock::now(), true};
    } catch (const Error& e) {
      if (task->on_error) task->on_error(422, e.what());
    } catch (const std::exception& e) {
      if (task->on_error) task->on_error(500, e.what());
    }
  }
}

// A client that left frees its sequence before the next step.
void GenScheduler::drop_gone() {
  for (auto it = active_.begin(); it != active_.end();) {
    const auto& gone = it->second.task->client_gone;
    if (gone && gone()) {
      engine_.cancel_generation(it->first);
      metrics_.count_cancelled();
      // Its route still hears of it (to free what the request holds); the answer goes nowhere.
      if (it->second.task->on_error) it->second.task->on_error(499, "the client closed the connection");
      it = active_.erase(it);
    } else {
      ++it;
    }
  }
}

// The gauges are published before any answer goes out: a client that has its whole answer and
// then reads /metrics finds its sequence gone and its pages free.
void GenScheduler::step() {
  std::vector<GenerationEvent> events;
  try {
    events = engine_.step_generation();
  } catch (const std::exception& e) {
    publish_load();
    // The engine dropped every sequence (Engine::step_generation): each request hears why.
    const std::string why = std::string("generation failed: ") + e.what();
    for (auto& [id, a] : active_)
      if (a.task->on_error) a.task->on_error(500, why);
    active_.clear();
    return;
  }
  publish_load();
  const auto now = Clock::now();
  metrics_.count_generated(events.size());
  for (GenerationEvent& e : events) {
    const auto it = active_.find(e.id);
    if (it == active_.end()) continue;
    Active& a = it->second;
    const double since = std::chrono::duration<double>(now - (a.first ? a.task->arrived : a.last_token)).count();
    if (a.first)
      metrics_.observe_first_token(since);
    else
      metrics_.observe_inter_token(since);
    a.first = false;
    a.last_token = now;
    if (a.task->on_token) a.task->on_token(e.token, e.text);
    if (e.finished) {
      GenerationResult r = engine_.take_generation_result(e.id);
      if (a.task->on_done) a.task->on_done(std::move(r));
      active_.erase(it);
    }
  }
}

void GenScheduler::run() {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !inbox_.empty() || !active_.empty(); });
      if (stopping_) break;
    }
    admit_new();
    drop_gone();
    if (active_.empty()) publish_load();
    else step();
  }
  // Shutting down: everything still here hears so.
  std::deque<std::shared_ptr<GenTask>> left;
  {
    std::lock_guard lock(mutex_);
    left.swap(inbox_);
  }
  for (auto& t : left)
    if (t->on_error) t->on_error(503, "the server is shutting down");
  for (auto& [id, a] : active_) {
    engine_.cancel_generation(id);
    if (a.task->on_error) a.task->on_error(503, "the server is shutting down");
  }
  active_.clear();
}

}  // namespace il::server
