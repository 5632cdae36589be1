#include "common/base/event_fd.h"

#include <sys/eventfd.h>
#include <unistd.h>

namespace carapace {

Result<EventFd> EventFd::create(int flags) {
  int fd = ::eventfd(0, flags | EFD_CLOEXEC);
  if (fd < 0) return sys_error("eventfd");
  return EventFd(UniqueFd(fd));
}

Status EventFd::write(uint64_t value) const {
  ssize_t n;
  do {
    n = ::write(fd_.get(), &value, sizeof value);
  } while (n < 0 && errno == EINTR);
  if (n != sizeof value) return sys_error("eventfd write");
  return {};
}

Result<uint64_t> EventFd::read() const {
  uint64_t value = 0;
  ssize_t n;
  do {
    n = ::read(fd_.get(), &value, sizeof value);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN) return uint64_t{0};
  if (n != sizeof value) return sys_error("eventfd read");
  return value;
}

}  // namespace carapace
