// EventLoop: one epoll thread for device work. Handlers are registered per fd before or while the
// loop runs; stop() wakes it through an eventfd so shutdown never waits on a guest.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/base/event_fd.h"
#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace carapace {

class EventLoop {
 public:
  // Called with the epoll event mask for the fd.
  using Handler = std::function<void(uint32_t events)>;

  static Result<std::unique_ptr<EventLoop>> create();
  ~EventLoop();

  Status add(int fd, uint32_t events, Handler handler);
  Status remove(int fd);

  // Runs handlers until stop(); returns an error only when epoll itself fails.
  Status run();
  // Runs the loop on its own thread.
  // `on_start`, if given, runs first on the new thread; false ends the thread without looping
  // (the thread's seccomp filter is installed there).
  void start_thread(std::function<bool()> on_start = nullptr);
  // Safe from any thread, handlers included; joins the loop thread if start_thread() was used,
  // unless called on that thread (the destructor joins it then).
  void stop();
  // For a paused VM (snapshots): stops the loop thread after the handler in progress, so no
  // device touches guest memory until resume_thread() starts it again with the same `on_start`.
  // Both from a thread other than the loop's; no-ops when the loop is not running on its thread.
  void pause_thread();
  void resume_thread();

 private:
  EventLoop(UniqueFd epoll, EventFd stop_event)
      : epoll_(std::move(epoll)), stop_event_(std::move(stop_event)) {}

  UniqueFd epoll_;
  EventFd stop_event_;
  std::mutex mu_;
  std::unordered_map<int, std::shared_ptr<Handler>> handlers_;
  std::thread thread_;
  std::function<bool()> on_start_;
  bool paused_ = false;
};

}  // namespace carapace
