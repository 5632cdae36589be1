#include "vmm/event/event_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "common/base/log.h"

namespace carapace {

Result<std::unique_ptr<EventLoop>> EventLoop::create() {
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return sys_error("epoll_create1");
  UniqueFd epoll(ep);
  auto stop = TRY(EventFd::create(EFD_NONBLOCK));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = stop.fd();
  if (::epoll_ctl(ep, EPOLL_CTL_ADD, stop.fd(), &ev) < 0) return sys_error("epoll_ctl stop");
  return std::unique_ptr<EventLoop>(new EventLoop(std::move(epoll), std::move(stop)));
}

EventLoop::~EventLoop() {
  stop();
}

Status EventLoop::add(int fd, uint32_t events, Handler handler) {
  std::lock_guard<std::mutex> lock(mu_);
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) < 0) return sys_error("epoll_ctl add");
  handlers_[fd] = std::make_shared<Handler>(std::move(handler));
  return {};
}

Status EventLoop::remove(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  handlers_.erase(fd);
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr) < 0) return sys_error("epoll_ctl del");
  return {};
}

Status EventLoop::run() {
  epoll_event events[32];
  for (;;) {
    int n = ::epoll_wait(epoll_.get(), events, 32, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("epoll_wait");
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == stop_event_.fd()) return {};
      std::shared_ptr<Handler> h;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = handlers_.find(fd);
        if (it != handlers_.end()) h = it->second;
      }
      if (h) (*h)(events[i].events);
    }
  }
}

void EventLoop::start_thread(std::function<bool()> on_start) {
  on_start_ = std::move(on_start);
  thread_ = std::thread([this] {
    if (on_start_ && !on_start_()) return;
    auto s = run();
    if (!s.ok()) LOG_ERROR("event loop: %s", s.error().describe().c_str());
  });
}

void EventLoop::stop() {
  (void)stop_event_.write(1);
  // A handler on the loop thread may call stop(): run() returns once the handler does, and the
  // thread is joined later from another thread (the destructor). Joining itself would throw.
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void EventLoop::pause_thread() {
  if (!thread_.joinable() || thread_.get_id() == std::this_thread::get_id()) return;
  stop();
  paused_ = true;
}

void EventLoop::resume_thread() {
  if (!paused_) return;
  paused_ = false;
  (void)stop_event_.read();  // consume the stop request, or the new thread would end at once
  start_thread(std::move(on_start_));
}

}  // namespace carapace
