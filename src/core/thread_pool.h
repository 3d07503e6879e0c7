// A fixed pool of worker threads running parallel_for over an index range. The calling thread
// takes part in the work, so a pool of N threads runs N-1 workers. One parallel_for runs at a
// time (callers from several threads queue); a nested call from inside a job runs inline.
//
// Small batches make hundreds of short parallel sections per forward, so waking sleeping
// workers would dominate: workers and the caller spin briefly on atomics before they block.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace il {

class ThreadPool {
 public:
  // threads == 0 means one per hardware thread.
  explicit ThreadPool(std::size_t threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  std::size_t size() const { return workers_.size() + 1; }

  // Calls fn(begin, end) on disjoint chunks covering [0, n), each at least `grain` long
  // (except the last), handed out dynamically so uneven work (ragged sequences) balances.
  void parallel_for(std::size_t n, std::size_t grain,
                    const std::function<void(std::size_t, std::size_t)>& fn);

 private:
  void worker_loop();
  void run_chunks();

  std::vector<std::thread> workers_;
  std::mutex submit_;  // one job at a time
  std::mutex mutex_;   // guards sleeping and waking
  std::condition_variable wake_;
  std::condition_variable done_;
  // Three cache lines with different writers, so that idle workers spinning on the job line do
  // not steal the line every chunk claim (next_) and every finish (active_) must write to: on 16
  // cores that false sharing made one parallel section cost several microseconds.
  // The job line: written by the caller before it publishes a job, then only read.
  alignas(64) std::atomic<std::size_t> generation_{0};
  std::atomic<bool> stop_{false};
  const std::function<void(std::size_t, std::size_t)>* job_ = nullptr;
  std::size_t job_n_ = 0;
  std::size_t chunk_ = 1;
  alignas(64) std::atomic<std::size_t> next_{0};    // the next unclaimed index
  alignas(64) std::atomic<std::size_t> active_{0};  // workers still inside the job
};

}  // namespace il
