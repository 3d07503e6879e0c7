#include "core/thread_pool.h"

#include <algorithm>

namespace il {
namespace {

// Iterations of the spin phase before blocking: tens of microseconds, long enough to bridge the
// gap between two steps of a forward pass, short enough not to matter when idle.
constexpr int kSpinIterations = 20000;

thread_local bool inside_job = false;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

ThreadPool::ThreadPool(std::size_t threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (std::size_t i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks() {
  const bool was_inside = inside_job;
  inside_job = true;
  for (;;) {
    const std::size_t begin = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (begin >= job_n_) break;
    (*job_)(begin, std::min(job_n_, begin + chunk_));
  }
  inside_job = was_inside;
}

void ThreadPool::worker_loop() {
  std::size_t seen = 0;
  for (;;) {
    bool ready = false;
    for (int i = 0; i < kSpinIterations && !ready; ++i) {
      ready = generation_.load(std::memory_order_acquire) != seen || stop_.load(std::memory_order_relaxed);
      if (!ready) cpu_relax();
    }
    if (!ready) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
    }
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_acquire);
    run_chunks();
    if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mutex_);
      done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(std::size_t n, std::size_t grain,
                              const std::function<void(std::size_t, std::size_t)>& fn) {
  if (n == 0) return;
  grain = std::max<std::size_t>(grain, 1);
  if (workers_.empty() || n <= grain || inside_job) {
    fn(0, n);
    return;
  }
  std::lock_guard submit(submit_);
  job_ = &fn;
  job_n_ = n;
  // About four chunks per thread balances ragged work without much claiming traffic.
  chunk_ = std::max(grain, n / (4 * size()));
  next_.store(0, std::memory_order_relaxed);
  active_.store(workers_.size(), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  {
    std::lock_guard lock(mutex_);  // a worker about to sleep either sees the new job or is woken
  }
  wake_.notify_all();
  run_chunks();
  bool done = false;
  for (int i = 0; i < kSpinIterations && !done; ++i) {
    done = active_.load(std::memory_order_acquire) == 0;
    if (!done) cpu_relax();
  }
  if (!done) {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return active_.load(std::memory_order_acquire) == 0; });
  }
  job_ = nullptr;
}

}  // namespace il
