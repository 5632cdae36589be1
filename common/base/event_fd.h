// EventFd: an owned eventfd used to wake threads and, later, for ioeventfd/irqfd.
#pragma once

#include <cstdint>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace carapace {

class EventFd {
 public:
  static Result<EventFd> create(int flags = 0);

  int fd() const { return fd_.get(); }
  // Adds `value` to the counter; wakes any reader.
  Status write(uint64_t value = 1) const;
  // Reads and clears the counter; with EFD_NONBLOCK returns 0 when nothing was pending.
  Result<uint64_t> read() const;

 private:
  explicit EventFd(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace carapace
