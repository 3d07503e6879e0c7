#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "core/thread_pool.h"

namespace il {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (std::size_t threads : {1u, 2u, 5u}) {
    ThreadPool pool(threads);
    for (std::size_t n : {0u, 1u, 7u, 1000u}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, 3, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) hits[i]++;
      });
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
    }
  }
}

TEST(ThreadPool, NestedCallsRunInline) {
  ThreadPool pool(3);
  std::atomic<int> total{0};
  pool.parallel_for(10, 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i)
      pool.parallel_for(10, 1, [&](std::size_t b2, std::size_t e2) { total += static_cast<int>(e2 - b2); });
  });
  EXPECT_EQ(total.load(), 100);
}

TEST(ThreadPool, ManyJobsInARow) {
  ThreadPool pool(4);
  std::atomic<long> sum{0};
  for (int j = 0; j < 2000; ++j)
    pool.parallel_for(64, 1, [&](std::size_t b, std::size_t e) { sum += static_cast<long>(e - b); });
  EXPECT_EQ(sum.load(), 2000L * 64);
}

// Many tiny jobs on more threads than this machine has cores: workers are often descheduled and
// arrive after their job was finished by others (and a new one published). Each must then do
// nothing: every index of every job runs exactly once, inside its own job.
TEST(ThreadPool, LateWorkersNeverTouchAFinishedJob) {
  ThreadPool pool(8);
  for (int j = 0; j < 20000; ++j) {
    const std::size_t n = 2 + static_cast<std::size_t>(j % 5);
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for(n, 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) hits[i]++;
    });
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "job " << j << " index " << i;
  }
}

}  // namespace
}  // namespace il
