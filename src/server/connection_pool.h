// The threads that serve HTTP connections (cpp-httplib's task queue, replaced).
//
// httplib 0.11 serves a connection on one thread for its whole keep-alive life, and a compute
// request blocks that thread until the inference thread has run it; so up to
// --max-concurrent-requests threads can be in use at once, plus a few for the cheap GET routes
// and the 429 answers. httplib's own pool starts all of them up front (516 by default) and hands
// each new connection to whichever waiting thread wakes first; a keep-alive connection is
// closed after 1000 requests, so under a steady load the connections keep moving to threads
// that never served before. Every thread that serves keeps its own malloc cache (glibc's
// tcache, up to ~240 KiB) and touched stack pages, so RSS grows with the number of threads
// that have ever served: 69, then 132, then 173 of them, and 37.0 -> 46.0 MiB, in 150 s of the
// mixed load with 64 clients on the dev box (bench/load_test.mjs, bert-mean fixture).
//
// This pool starts a thread only when no idle one is left, up to the cap; hands a connection
// to the thread that went idle last (its caches are warm, and the others stay untouched); and
// lets a thread idle for a while exit, which returns its cache. The threads that hold memory
// follow the connections actually open (70 threads through the same 150 s run) instead of
// the configured limit or the run's length.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include <httplib.h>

namespace il::server {

class ConnectionPool final : public httplib::TaskQueue {
 public:
  ConnectionPool(std::size_t max_threads, std::chrono::milliseconds idle_exit);
  ~ConnectionPool() override;
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Runs `task` on an idle thread, a new one, or (all `max_threads` busy) on the first one that
  // frees up.
  void enqueue(std::function<void()> task) override;
  // Runs what is queued, then joins every thread.
  void shutdown() override;

  std::size_t threads() const;       // alive now
  std::size_t idle_threads() const;  // alive and waiting for a connection
  std::size_t peak_threads() const;  // most alive at once

 private:
  struct Worker {
    std::condition_variable wake;
    std::function<void()> task;  // handed over by enqueue() while the worker was idle
  };
  using ThreadList = std::list<std::thread>;

  void work(ThreadList::iterator self, std::function<void()> task);
  void join_exited(std::unique_lock<std::mutex>& lock);

  const std::size_t max_threads_;
  const std::chrono::milliseconds idle_exit_;
  mutable std::mutex mutex_;
  std::condition_variable all_exited_;
  std::vector<Worker*> idle_;                  // a stack: the back went idle last
  std::deque<std::function<void()>> pending_;  // waiting for a thread (all busy at the cap)
  ThreadList threads_;
  std::vector<ThreadList::iterator> exited_;   // finished, not joined yet
  std::size_t alive_ = 0;
  std::size_t peak_ = 0;
  bool shutdown_ = false;
};

}  // namespace il::server
