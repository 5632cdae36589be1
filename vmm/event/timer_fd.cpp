#include "vmm/event/timer_fd.h"

#include <sys/timerfd.h>

#include <cerrno>

namespace carapace {

Result<UniqueFd> create_timer_fd(const std::string& who) {
  int fd = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd < 0) {
    const int err = errno;  // before the message is built
    return sys_error(who + ": timerfd_create", err);
  }
  return UniqueFd(fd);
}

Status arm_timer_fd(int fd, uint64_t ns) {
  itimerspec spec{};
  spec.it_value.tv_sec = static_cast<time_t>(ns / 1000000000);
  spec.it_value.tv_nsec = static_cast<long>(ns % 1000000000);
  if (::timerfd_settime(fd, 0, &spec, nullptr) < 0) return sys_error("timerfd_settime");
  return {};
}

}  // namespace carapace
