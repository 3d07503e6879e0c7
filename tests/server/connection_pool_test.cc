// The connection threads: started on demand up to the cap, the most recently idle one reused,
// idle ones leaving, queued connections served when a thread frees up, and everything run
// before shutdown returns.
#include "server/connection_pool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

namespace il::server {
namespace {

using namespace std::chrono_literals;

// Polls `cond` for up to 5 s.
template <typename Cond>
bool eventually(Cond cond) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Tasks that block until released.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> waiting{0};
  void wait() {
    std::unique_lock lock(m);
    waiting += 1;
    cv.wait(lock, [&] { return open; });
  }
  void release() {
    {
      std::lock_guard lock(m);
      open = true;
    }
    cv.notify_all();
  }
};

TEST(ConnectionPool, StartsThreadsUpToTheCapAndQueuesTheRest) {
  ConnectionPool pool(4, 10s);
  EXPECT_EQ(pool.threads(), 0u);  // nothing up front
  Gate gate;
  std::atomic<int> done{0};
  for (int i = 0; i < 10; ++i) pool.enqueue([&] { gate.wait(); done += 1; });
  ASSERT_TRUE(eventually([&] { return gate.waiting.load() == 4; }));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(gate.waiting.load(), 4);  // six wait for a thread, none is started for them
  EXPECT_EQ(pool.threads(), 4u);
  gate.release();
  ASSERT_TRUE(eventually([&] { return done.load() == 10; }));
  EXPECT_EQ(pool.peak_threads(), 4u);
}

TEST(ConnectionPool, OneClientAtATimeUsesOneThread) {
  // httplib's own pool hands each connection to any of its threads; here a sequential load
  // keeps landing on the same warm thread.
  ConnectionPool pool(64, 10s);
  std::atomic<int> done{0};
  for (int i = 0; i < 200; ++i) {
    pool.enqueue([&] { done += 1; });
    ASSERT_TRUE(eventually([&] { return done.load() == i + 1 && pool.idle_threads() == pool.threads(); }));
  }
  EXPECT_EQ(pool.peak_threads(), 1u);
  EXPECT_EQ(pool.threads(), 1u);
}

TEST(ConnectionPool, IdleThreadsLeaveAndNewOnesStartLater) {
  ConnectionPool pool(8, 50ms);
  Gate gate;
  std::atomic<int> done{0};
  for (int i = 0; i < 8; ++i) pool.enqueue([&] { gate.wait(); done += 1; });
  ASSERT_TRUE(eventually([&] { return gate.waiting.load() == 8; }));
  EXPECT_EQ(pool.threads(), 8u);
  gate.release();
  ASSERT_TRUE(eventually([&] { return done.load() == 8; }));
  ASSERT_TRUE(eventually([&] { return pool.threads() == 0; }));
  pool.enqueue([&] { done += 1; });
  ASSERT_TRUE(eventually([&] { return done.load() == 9; }));
}

TEST(ConnectionPool, ShutdownRunsWhatIsQueuedFirst) {
  std::atomic<int> done{0};
  {
    ConnectionPool pool(2, 10s);
    for (int i = 0; i < 20; ++i) pool.enqueue([&] {
      std::this_thread::sleep_for(1ms);
      done += 1;
    });
    pool.shutdown();
    EXPECT_EQ(done.load(), 20);
    EXPECT_EQ(pool.threads(), 0u);
  }
  EXPECT_EQ(done.load(), 20);
}

}  // namespace
}  // namespace il::server
