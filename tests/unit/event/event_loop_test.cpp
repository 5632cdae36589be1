// EventLoop: handlers run when their fd is ready, stop delivery once removed, and stop() ends
// the loop from any thread.
#include "vmm/event/event_loop.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>

#include "common/base/unique_fd.h"

namespace carapace {
namespace {

using namespace std::chrono_literals;

struct Pipe {
  UniqueFd r, w;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
      r.reset(fds[0]);
      w.reset(fds[1]);
    }
  }
  void poke() const { (void)!::write(w.get(), "x", 1); }
  void drain() const {
    char buf[64];
    while (::read(r.get(), buf, sizeof buf) > 0) {
    }
  }
};

// A hung loop would hang the whole binary; fail loudly instead.
template <typename F>
void wait_or_die(F& fut, const char* what) {
  if (fut.wait_for(5s) != std::future_status::ready) {
    std::fprintf(stderr, "timed out waiting for %s\n", what);
    std::abort();
  }
}

TEST(EventLoopTest, HandlerRunsWhenPipeBecomesReadable) {
  auto loop = EventLoop::create();
  ASSERT_TRUE(loop.ok());
  Pipe p;
  std::promise<uint32_t> got;
  auto fut = got.get_future();
  std::atomic<bool> done{false};
  ASSERT_TRUE((*loop)
                  ->add(p.r.get(), EPOLLIN,
                        [&](uint32_t ev) {
                          p.drain();
                          if (!done.exchange(true)) got.set_value(ev);
                        })
                  .ok());
  (*loop)->start_thread();
  EXPECT_EQ(fut.wait_for(50ms), std::future_status::timeout) << "ran before the fd was ready";
  p.poke();
  wait_or_die(fut, "the handler");
  EXPECT_TRUE(fut.get() & EPOLLIN);
  (*loop)->stop();
}

TEST(EventLoopTest, StopFromAnotherThreadEndsRun) {
  auto loop = EventLoop::create();
  ASSERT_TRUE(loop.ok());
  EventLoop* l = loop->get();
  auto fut = std::async(std::launch::async, [l] { return l->run(); });
  EXPECT_EQ(fut.wait_for(50ms), std::future_status::timeout) << "run() returned on its own";
  std::thread([l] { l->stop(); }).join();
  wait_or_die(fut, "run() to return after stop()");
  EXPECT_TRUE(fut.get().ok());
}

TEST(EventLoopTest, StopFromAHandlerOnTheLoopThread) {
  auto loop = EventLoop::create();
  ASSERT_TRUE(loop.ok());
  EventLoop* l = loop->get();
  Pipe p;
  std::promise<void> ran;
  auto fut = ran.get_future();
  ASSERT_TRUE(l->add(p.r.get(), EPOLLIN, [&](uint32_t) {
                 p.drain();
                 l->stop();  // must not try to join the thread it runs on
                 ran.set_value();
               }).ok());
  l->start_thread();
  p.poke();
  wait_or_die(fut, "the stopping handler");
  loop->reset();  // joins the (finished) loop thread
}

TEST(EventLoopTest, RemoveStopsDelivery) {
  auto loop = EventLoop::create();
  ASSERT_TRUE(loop.ok());
  Pipe p;
  std::atomic<int> calls{0};
  std::promise<void> first;
  auto fut = first.get_future();
  ASSERT_TRUE((*loop)
                  ->add(p.r.get(), EPOLLIN,
                        [&](uint32_t) {
                          p.drain();
                          if (calls.fetch_add(1) == 0) first.set_value();
                        })
                  .ok());
  (*loop)->start_thread();
  p.poke();
  wait_or_die(fut, "the first delivery");
  ASSERT_TRUE((*loop)->remove(p.r.get()).ok());
  p.poke();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(calls.load(), 1);
  (*loop)->stop();
}

TEST(EventLoopTest, HandlerMayRemoveItself) {
  auto loop = EventLoop::create();
  ASSERT_TRUE(loop.ok());
  EventLoop* l = loop->get();
  Pipe p;
  std::atomic<int> calls{0};
  std::promise<void> ran;
  auto fut = ran.get_future();
  ASSERT_TRUE(l->add(p.r.get(), EPOLLIN, [&](uint32_t) {
                 // Not drained: level-triggered epoll would call again if still registered.
                 if (calls.fetch_add(1) == 0) {
                   EXPECT_TRUE(l->remove(p.r.get()).ok());
                   ran.set_value();
                 }
               }).ok());
  l->start_thread();
  p.poke();
  wait_or_die(fut, "the self-removing handler");
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(calls.load(), 1);
  l->stop();
}

TEST(EventLoopTest, AddAndRemoveErrors) {
  auto loop = EventLoop::create();
  ASSERT_TRUE(loop.ok());
  Pipe p;
  ASSERT_TRUE((*loop)->add(p.r.get(), EPOLLIN, [](uint32_t) {}).ok());
  auto twice = (*loop)->add(p.r.get(), EPOLLIN, [](uint32_t) {});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().sys_errno, EEXIST);
  EXPECT_FALSE((*loop)->add(-1, EPOLLIN, [](uint32_t) {}).ok());
  ASSERT_TRUE((*loop)->remove(p.r.get()).ok());
  EXPECT_FALSE((*loop)->remove(p.r.get()).ok());
}

// A paused VM's devices must not run (snapshots): no handler between pause_thread() and
// resume_thread(), and the thread's start hook (its seccomp filter) runs again on resume.
TEST(EventLoopTest, PausedLoopRunsNoHandlerUntilResumed) {
  auto loop = EventLoop::create();
  ASSERT_TRUE(loop.ok());
  Pipe p;
  std::atomic<int> calls{0}, starts{0};
  ASSERT_TRUE((*loop)
                  ->add(p.r.get(), EPOLLIN,
                        [&](uint32_t) {
                          p.drain();
                          ++calls;
                        })
                  .ok());
  (*loop)->start_thread([&] {
    ++starts;
    return true;
  });
  p.poke();
  for (int i = 0; i < 1000 && calls.load() == 0; ++i)
    std::this_thread::sleep_for(1ms);
  ASSERT_EQ(calls.load(), 1);
  (*loop)->pause_thread();
  p.poke();
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(calls.load(), 1) << "a handler ran while the loop was paused";
  (*loop)->resume_thread();
  for (int i = 0; i < 1000 && calls.load() == 1; ++i)
    std::this_thread::sleep_for(1ms);
  EXPECT_EQ(calls.load(), 2) << "the event that arrived while paused was lost";
  EXPECT_EQ(starts.load(), 2);
  (*loop)->stop();
}

}  // namespace
}  // namespace carapace
