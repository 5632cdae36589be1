// UringEngine: the asynchronous backend, one io_uring per block device. Operations are queued
// with a 64-bit tag, submitted in one batch, and complete in any order; completions raise an
// eventfd (io_uring_register_eventfd) that the device registers in the event loop.
//
// The engine counts what it has in flight. drain() cancels what can be cancelled and waits for
// every outstanding completion, so nothing the kernel still holds (iovecs, guest buffers) is
// released early: the device calls it on reset and before destruction.
//
// Not thread-safe: used under the device's lock.
#pragma once

#include <liburing.h>
#include <sys/uio.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "common/base/event_fd.h"
#include "common/base/result.h"

namespace carapace::block {

class UringEngine {
 public:
  // `entries`: the most operations in flight at once (the virtqueue size). Fails where io_uring
  // is unavailable (old kernel, seccomp, io_uring_disabled); the device then runs synchronously.
  static Result<std::unique_ptr<UringEngine>> create(unsigned entries);
  ~UringEngine();
  UringEngine(const UringEngine&) = delete;
  UringEngine& operator=(const UringEngine&) = delete;

  int event_fd() const { return event_.fd(); }
  unsigned in_flight() const { return in_flight_; }

  // Queue one operation; false when the submission ring is full (cannot happen while the device
  // keeps at most `entries` in flight). The iovec array must stay valid until completion.
  bool read(uint64_t tag, int fd, const iovec* iov, unsigned count, uint64_t offset);
  bool write(uint64_t tag, int fd, const iovec* iov, unsigned count, uint64_t offset);
  bool fdatasync(uint64_t tag, int fd);
  bool fallocate(uint64_t tag, int fd, int mode, uint64_t offset, uint64_t len);
  // Hands everything queued to the kernel.
  Status submit();

  using Completion = std::function<void(uint64_t tag, int32_t result)>;
  // Calls `done` for each completion ready now; returns how many. Does not block.
  unsigned reap(const Completion& done);
  // Blocks until at least one completion is ready (or `timeout_ms` passes).
  Status wait(int timeout_ms);
  // Cancels what it can, then waits until nothing is in flight, passing each completion to
  // `done`. Gives up after `timeout_ms` (a wedged device); returns false then.
  bool drain(const Completion& done, int timeout_ms);

 private:
  UringEngine(EventFd event) : event_(std::move(event)) {}
  io_uring_sqe* next_sqe(uint64_t tag);

  io_uring ring_{};
  bool ring_ready_ = false;
  EventFd event_;
  unsigned in_flight_ = 0;  // queued or submitted, not yet reaped
};

}  // namespace carapace::block
