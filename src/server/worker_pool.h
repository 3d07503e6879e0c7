// The tokenization workers: a fixed set of threads running queued tasks in
// order. The routes' handlers run here (body parsing, tokenization, and
// formatting the answer after the model), so that this work overlaps with the
// inference thread's and its parallelism is bounded by
// --tokenization-workers, not by the number of connections.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace il::server {

class WorkerPool {
public:
  explicit WorkerPool(std::size_t threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool &) = delete;
  WorkerPool &operator=(const WorkerPool &) = delete;

  // Runs `task` on a worker; the future rethrows what it throws.
  std::future<void> submit(std::function<void()> task);
  // Runs `task` on a worker, nobody waiting; what it throws is dropped (it must
  // answer itself).
  void post(std::function<void()> task);
  std::size_t size() const { return threads_.size(); }

private:
  void work();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

} // namespace il::server
