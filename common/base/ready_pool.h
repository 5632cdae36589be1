// ReadyPool<T>: items made ahead of time by a background thread, so that a request only takes one
// (the VM pool of the monitor, the daemon's pools of paused microVMs and of process sandboxes).
// take() never waits for a refill: an empty pool answers nullptr and the caller makes one itself
// (a miss). Items that die while pooled are dropped and replaced; a failed refill is retried after
// a pause instead of spinning on a lasting failure (out of memory, fds, a broken template).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "common/base/result.h"

namespace carapace {

template <typename T>
class ReadyPool {
 public:
  struct Options {
    size_t capacity = 0;                                // items kept ready; 0: no refill thread
    std::function<Result<std::unique_ptr<T>>()> make;   // one new item, outside the pool's lock
    std::function<bool(T&)> alive;                      // optional: pooled items it rejects go
    std::function<void(const Error&)> on_refill_error;  // optional: told of each failed refill
    std::chrono::milliseconds retry_after{1000};        // pause after a failed refill
    // With `alive`: how often pooled items are checked while the pool is full.
    std::chrono::milliseconds check_every{1000};
  };

  struct Stats {
    size_t ready = 0;     // items in the pool now
    size_t capacity = 0;  // items it aims to hold
    uint64_t hits = 0;    // takes served from the pool (as counted by count_hit)
    uint64_t misses = 0;  // takes the caller served itself (count_miss)
    uint64_t refills = 0;
    uint64_t refill_failures = 0;
    double last_refill_ms = 0;  // time make() took for the last item the thread added
    double mean_refill_ms = 0;
  };

  explicit ReadyPool(Options options) : options_(std::move(options)) {}
  ~ReadyPool() { (void)stop(); }
  ReadyPool(const ReadyPool&) = delete;
  ReadyPool& operator=(const ReadyPool&) = delete;

  // Starts the refill thread (none when the capacity is 0).
  void start() {
    if (options_.capacity > 0 && !thread_.joinable()) thread_ = std::thread([this] { refill(); });
  }
  // An item made elsewhere (the template build's first instance).
  void add(std::unique_ptr<T> item) {
    {
      std::lock_guard lock(mu_);
      if (stopping_ || ready_.size() >= options_.capacity) return;  // destroyed here
      ready_.push_back(std::move(item));
    }
    changed_.notify_all();
  }
  // A pooled item, or nullptr when the pool is empty; an error once stop() has begun.
  Result<std::unique_ptr<T>> take() {
    std::unique_ptr<T> item;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return make_error("the pool is shutting down");
      if (ready_.empty()) return std::unique_ptr<T>();
      item = std::move(ready_.front());
      ready_.pop_front();
    }
    changed_.notify_all();  // the refill thread starts on a replacement now
    return item;
  }
  void count_hit() {
    std::lock_guard lock(mu_);
    ++stats_.hits;
  }
  void count_miss() {
    std::lock_guard lock(mu_);
    ++stats_.misses;
  }
  Stats stats() const {
    std::lock_guard lock(mu_);
    Stats s = stats_;
    s.ready = ready_.size();
    s.capacity = options_.capacity;
    return s;
  }
  // Blocks until the pool holds its capacity or `timeout` passes; false on timeout.
  bool wait_full(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, timeout, [&] { return ready_.size() >= options_.capacity; });
  }
  // Stops and joins the refill thread. The pooled items are handed to the caller, to be
  // destroyed where it wants (outside its own locks: destroying one may take a while).
  std::deque<std::unique_ptr<T>> stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
    std::deque<std::unique_ptr<T>> out;
    std::lock_guard lock(mu_);
    out.swap(ready_);
    return out;
  }

 private:
  void refill() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      if (options_.alive)
        std::erase_if(ready_, [&](std::unique_ptr<T>& i) { return !options_.alive(*i); });
      if (ready_.size() >= options_.capacity) {
        if (options_.alive)
          changed_.wait_for(lock, options_.check_every);
        else
          changed_.wait(lock, [&] { return stopping_ || ready_.size() < options_.capacity; });
        continue;
      }
      lock.unlock();
      const auto start = std::chrono::steady_clock::now();
      auto item = options_.make();
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      lock.lock();
      if (!item.ok()) {
        ++stats_.refill_failures;
        if (options_.on_refill_error) {
          lock.unlock();
          options_.on_refill_error(item.error());
          lock.lock();
        }
        changed_.wait_for(lock, options_.retry_after, [&] { return stopping_; });
        continue;
      }
      if (stopping_) break;  // the item is destroyed as it goes out of scope
      ready_.push_back(std::move(item).value());
      ++stats_.refills;
      stats_.last_refill_ms = ms;
      refill_ms_total_ += ms;
      stats_.mean_refill_ms = refill_ms_total_ / static_cast<double>(stats_.refills);
      lock.unlock();
      changed_.notify_all();
      lock.lock();
    }
  }

  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable changed_;  // the pool shrank, grew, or is stopping
  std::deque<std::unique_ptr<T>> ready_;
  bool stopping_ = false;
  Stats stats_;
  double refill_ms_total_ = 0;
  std::thread thread_;
};

}  // namespace carapace
