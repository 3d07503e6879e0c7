#include "server/worker_pool.h"

#include <algorithm>

namespace il::server {

WorkerPool::WorkerPool(std::size_t threads) {
  threads = std::max<std::size_t>(threads, 1);
  for (std::size_t i = 0; i < threads; ++i)
    threads_.emplace_back([this] { work(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto &t : threads_)
    t.join();
}

std::future<void> WorkerPool::submit(std::function<void()> task) {
  std::packaged_task<void()> pt(std::move(task));
  auto fut = pt.get_future();
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(pt));
  }
  ready_.notify_one();
  return fut;
}

void WorkerPool::post(std::function<void()> task) {
  (void)submit([task = std::move(task)] {
    try {
      task();
    } catch (...) {
    }
  });
}

void WorkerPool::work() {
  for (;;) {
    std::packaged_task<void()> task;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      // Queued tasks still run after stop was asked: their callers are waiting
      // on them.
      if (tasks_.empty())
        return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

} // namespace il::server
