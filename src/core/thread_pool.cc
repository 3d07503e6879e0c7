#include "core/thread_pool.h"

#include <algorithm>

namespace il {

ThreadPool::ThreadPool(std::size_t threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (std::size_t i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks() {
  for (;;) {
    std::size_t begin, end;
    {
      std::lock_guard lock(mutex_);
      if (next_ >= job_n_) return;
      // Hand out about a quarter of what is left per thread, never less than the grain.
      const std::size_t left = job_n_ - next_;
      const std::size_t chunk = std::max(job_grain_, left / (4 * size()));
      begin = next_;
      end = std::min(job_n_, begin + chunk);
      next_ = end;
    }
    (*job_)(begin, end);
  }
}

void ThreadPool::worker_loop() {
  std::size_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_chunks();
    {
      std::lock_guard lock(mutex_);
      if (--active_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(std::size_t n, std::size_t grain,
                              const std::function<void(std::size_t, std::size_t)>& fn) {
  if (n == 0) return;
  grain = std::max<std::size_t>(grain, 1);
  {
    std::unique_lock lock(mutex_);
    // Run inline when there is nothing to share, or when called from inside a job.
    if (workers_.empty() || n <= grain || busy_) {
      lock.unlock();
      fn(0, n);
      return;
    }
    busy_ = true;
    job_ = &fn;
    job_n_ = n;
    job_grain_ = grain;
    next_ = 0;
    active_ = workers_.size();
    ++generation_;
  }
  wake_.notify_all();
  run_chunks();
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return active_ == 0; });
  job_ = nullptr;
  busy_ = false;
}

}  // namespace il
