#include "server/connection_pool.h"

#include <algorithm>
#include <system_error>

namespace il::server {

ConnectionPool::ConnectionPool(std::size_t max_threads, std::chrono::milliseconds idle_exit)
    : max_threads_(std::max<std::size_t>(max_threads, 1)), idle_exit_(idle_exit) {}

ConnectionPool::~ConnectionPool() { shutdown(); }

void ConnectionPool::enqueue(std::function<void()> task) {
  std::unique_lock lock(mutex_);
  join_exited(lock);
  if (!idle_.empty()) {
    Worker* w = idle_.back();
    idle_.pop_back();
    w->task = std::move(task);
    w->wake.notify_one();
    return;
  }
  if (alive_ < max_threads_ && !shutdown_) {
    threads_.emplace_back();
    const auto self = std::prev(threads_.end());
    try {
      // work() takes the lock before it reads `self`, so it sees the assignment.
      *self = std::thread(&ConnectionPool::work, this, self, std::move(task));
      alive_ += 1;
      peak_ = std::max(peak_, alive_);
      return;
    } catch (const std::system_error&) {
      // Out of threads (ulimit -u, memory): the connection waits for one of ours instead.
      threads_.erase(self);
    }
  }
  pending_.push_back(std::move(task));
}

void ConnectionPool::work(ThreadList::iterator self, std::function<void()> task) {
  Worker me;
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!task && !pending_.empty()) {
      task = std::move(pending_.front());
      pending_.pop_front();
    }
    if (task) {
      lock.unlock();
      task();
      task = nullptr;
      lock.lock();
      continue;
    }
    if (shutdown_) break;
    idle_.push_back(&me);
    const bool woken = me.wake.wait_for(lock, idle_exit_, [&] { return me.task != nullptr || shutdown_; });
    if (me.task) {  // enqueue() took us off the idle stack
      task = std::move(me.task);
      me.task = nullptr;
      continue;
    }
    idle_.erase(std::find(idle_.begin(), idle_.end(), &me));
    if (!woken) break;  // idle for idle_exit_: give the stack and the thread back
  }
  alive_ -= 1;
  exited_.push_back(self);
  if (alive_ == 0) all_exited_.notify_all();
}

void ConnectionPool::join_exited(std::unique_lock<std::mutex>&) {
  // A thread lists itself as its last step under the lock, so these joins wait only for it to
  // return from work().
  for (const auto it : exited_) {
    it->join();
    threads_.erase(it);
  }
  exited_.clear();
}

void ConnectionPool::shutdown() {
  std::unique_lock lock(mutex_);
  shutdown_ = true;
  for (Worker* w : idle_) w->wake.notify_one();
  // Busy threads finish their connection and then what is pending before they leave.
  all_exited_.wait(lock, [this] { return alive_ == 0; });
  join_exited(lock);
  // Left only when no thread could be started at all: served here rather than dropped.
  while (!pending_.empty()) {
    auto task = std::move(pending_.front());
    pending_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

std::size_t ConnectionPool::threads() const {
  std::lock_guard lock(mutex_);
  return alive_;
}

std::size_t ConnectionPool::idle_threads() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

std::size_t ConnectionPool::peak_threads() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

}  // namespace il::server
