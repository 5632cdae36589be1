// ReadyPool: the one pool of ready items behind the VM pool and the daemon's back ends.
#include "common/base/ready_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace carapace {
namespace {

using std::chrono::milliseconds;

struct Item {
  int serial;
  std::atomic<bool> alive{true};
  explicit Item(int s) : serial(s) {}
};

ReadyPool<Item>::Options counting(size_t capacity, std::atomic<int>& made) {
  ReadyPool<Item>::Options o;
  o.capacity = capacity;
  o.make = [&made]() -> Result<std::unique_ptr<Item>> { return std::make_unique<Item>(made++); };
  o.retry_after = milliseconds(10);
  o.check_every = milliseconds(10);
  return o;
}

TEST(ReadyPoolTest, FillsToItsCapacityAndRefillsAfterATake) {
  std::atomic<int> made{0};
  ReadyPool<Item> pool(counting(3, made));
  pool.start();
  ASSERT_TRUE(pool.wait_full(milliseconds(5000)));
  EXPECT_EQ(pool.stats().ready, 3u);
  auto first = pool.take();
  ASSERT_TRUE(first.ok());
  ASSERT_NE(*first, nullptr);
  EXPECT_EQ((*first)->serial, 0);  // oldest first
  ASSERT_TRUE(pool.wait_full(milliseconds(5000)));
  EXPECT_EQ(made.load(), 4);
  EXPECT_EQ(pool.stats().refills, 4u);
}

TEST(ReadyPoolTest, AnEmptyPoolAnswersNothingAndNeverStartsAThread) {
  std::atomic<int> made{0};
  ReadyPool<Item> pool(counting(0, made));
  pool.start();
  pool.add(std::make_unique<Item>(7));  // no room: destroyed
  auto t = pool.take();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, nullptr);
  pool.count_miss();
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(made.load(), 0);
  EXPECT_EQ(pool.stats().misses, 1u);
  EXPECT_EQ(pool.stats().ready, 0u);
}

TEST(ReadyPoolTest, DeadItemsAreDroppedAndReplaced) {
  std::atomic<int> made{0};
  std::atomic<Item*> first{nullptr};
  ReadyPool<Item>::Options o;
  o.capacity = 2;
  o.make = [&]() -> Result<std::unique_ptr<Item>> {
    auto item = std::make_unique<Item>(made++);
    if (item->serial == 0) first = item.get();
    return item;
  };
  o.alive = [](Item& i) { return i.alive.load(); };
  o.check_every = milliseconds(10);
  ReadyPool<Item> pool(std::move(o));
  pool.start();
  ASSERT_TRUE(pool.wait_full(milliseconds(5000)));
  // The first item dies while pooled: the pool drops it within a check and makes a replacement.
  first.load()->alive = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (made.load() < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(made.load(), 3);
  ASSERT_TRUE(pool.wait_full(milliseconds(5000)));
  auto rest = pool.stop();
  ASSERT_EQ(rest.size(), 2u);
  for (auto& i : rest)
    EXPECT_NE(i->serial, 0) << "the dead item stayed in the pool";
}

TEST(ReadyPoolTest, AFailingRefillIsCountedReportedAndRetried) {
  std::atomic<int> calls{0};
  std::atomic<int> reported{0};
  ReadyPool<Item>::Options o;
  o.capacity = 1;
  o.make = [&calls]() -> Result<std::unique_ptr<Item>> {
    if (calls++ < 2) return make_error("not yet");
    return std::make_unique<Item>(calls.load());
  };
  o.on_refill_error = [&reported](const Error& e) {
    EXPECT_EQ(e.message, "not yet");
    ++reported;
  };
  o.retry_after = milliseconds(10);
  ReadyPool<Item> pool(std::move(o));
  pool.start();
  ASSERT_TRUE(pool.wait_full(milliseconds(5000)));
  EXPECT_EQ(pool.stats().refill_failures, 2u);
  EXPECT_EQ(reported.load(), 2);
  EXPECT_EQ(pool.stats().refills, 1u);
}

TEST(ReadyPoolTest, StopHandsBackThePooledItemsAndRefusesLaterTakes) {
  std::atomic<int> made{0};
  ReadyPool<Item> pool(counting(2, made));
  pool.start();
  ASSERT_TRUE(pool.wait_full(milliseconds(5000)));
  auto rest = pool.stop();
  EXPECT_EQ(rest.size(), 2u);
  EXPECT_FALSE(pool.take().ok());
  EXPECT_EQ(pool.stats().ready, 0u);
  pool.count_hit();
  EXPECT_EQ(pool.stats().hits, 1u);
}

}  // namespace
}  // namespace carapace
