#include "vmm/devices/block/uring_engine.h"

#include <sys/eventfd.h>
#include <time.h>

#include <array>
#include <utility>
#include <vector>

#include "common/base/log.h"

namespace carapace::block {

namespace {

// The tag of the engine's own cancel request: never a device tag, never counted.
constexpr uint64_t kInternalTag = UINT64_MAX;

uint64_t monotonic_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

}  // namespace

Result<std::unique_ptr<UringEngine>> UringEngine::create(unsigned entries) {
  auto event = TRY(EventFd::create(EFD_NONBLOCK));
  std::unique_ptr<UringEngine> e(new UringEngine(std::move(event)));
  // The completion queue is twice the submission queue by default: room for every request in
  // flight plus the cancel request of drain().
  const int r = io_uring_queue_init(entries, &e->ring_, 0);
  if (r < 0) return sys_error("io_uring_queue_init", -r);
  e->ring_ready_ = true;
  const int reg = io_uring_register_eventfd(&e->ring_, e->event_.fd());
  if (reg < 0) return sys_error("io_uring_register_eventfd", -reg);
  return e;
}

UringEngine::~UringEngine() {
  if (!ring_ready_) return;
  if (in_flight_ > 0 && !drain([](uint64_t, int32_t) {}, 10000)) {
    // The kernel still holds buffers: leak the ring rather than let it write freed memory.
    LOG_ERROR("virtio-blk: io_uring requests still in flight at teardown; ring leaked");
    return;
  }
  io_uring_queue_exit(&ring_);
}

io_uring_sqe* UringEngine::next_sqe(uint64_t tag) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) return nullptr;
  ++in_flight_;
  io_uring_sqe_set_data64(sqe, tag);
  return sqe;
}

bool UringEngine::read(uint64_t tag, int fd, const iovec* iov, unsigned count, uint64_t offset) {
  io_uring_sqe* sqe = next_sqe(tag);
  if (sqe == nullptr) return false;
  io_uring_prep_readv(sqe, fd, iov, count, offset);
  return true;
}

bool UringEngine::write(uint64_t tag, int fd, const iovec* iov, unsigned count, uint64_t offset) {
  io_uring_sqe* sqe = next_sqe(tag);
  if (sqe == nullptr) return false;
  io_uring_prep_writev(sqe, fd, iov, count, offset);
  return true;
}

bool UringEngine::fdatasync(uint64_t tag, int fd) {
  io_uring_sqe* sqe = next_sqe(tag);
  if (sqe == nullptr) return false;
  io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
  return true;
}

bool UringEngine::fallocate(uint64_t tag, int fd, int mode, uint64_t offset, uint64_t len) {
  io_uring_sqe* sqe = next_sqe(tag);
  if (sqe == nullptr) return false;
  io_uring_prep_fallocate(sqe, fd, mode, static_cast<off_t>(offset), static_cast<off_t>(len));
  return true;
}

Status UringEngine::submit() {
  for (;;) {
    const int r = io_uring_submit(&ring_);
    if (r >= 0) return {};
    if (r == -EINTR) continue;
    // -EAGAIN/-EBUSY: the kernel is short of resources; what stayed queued goes with the next
    // submit (every completion path submits again).
    if (r == -EAGAIN || r == -EBUSY) return {};
    return sys_error("io_uring_submit", -r);
  }
}

unsigned UringEngine::reap(const Completion& done) {
  unsigned total = 0;
  // Copy completions out and advance the ring before calling back: `done` may queue more work.
  std::array<io_uring_cqe*, 64> cqes;
  std::array<std::pair<uint64_t, int32_t>, 64> ready;
  for (;;) {
    const unsigned n = io_uring_peek_batch_cqe(&ring_, cqes.data(), cqes.size());
    if (n == 0) break;
    unsigned m = 0;
    for (unsigned i = 0; i < n; ++i) {
      const uint64_t tag = io_uring_cqe_get_data64(cqes[i]);
      if (tag == kInternalTag) continue;
      ready[m++] = {tag, cqes[i]->res};
    }
    io_uring_cq_advance(&ring_, n);
    in_flight_ -= m;
    for (unsigned i = 0; i < m; ++i)
      done(ready[i].first, ready[i].second);
    total += m;
  }
  return total;
}

Status UringEngine::wait(int timeout_ms) {
  io_uring_cqe* cqe = nullptr;
  __kernel_timespec ts{};
  ts.tv_sec = timeout_ms / 1000;
  ts.tv_nsec = static_cast<long long>(timeout_ms % 1000) * 1000000;
  const int r = io_uring_wait_cqe_timeout(&ring_, &cqe, &ts);
  if (r < 0 && r != -ETIME && r != -EINTR) return sys_error("io_uring_wait_cqe", -r);
  return {};
}

bool UringEngine::drain(const Completion& done, int timeout_ms) {
  if (in_flight_ == 0) return true;
  // Everything queued must reach the kernel, or it would never complete.
  (void)submit();
  // IORING_ASYNC_CANCEL_ANY (Linux 5.19+): cancels what has not started. Regular-file I/O that
  // has started runs to completion; older kernels refuse the cancel and we just wait.
  if (io_uring_sqe* sqe = io_uring_get_sqe(&ring_)) {
    io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
    io_uring_sqe_set_data64(sqe, kInternalTag);
    (void)submit();
  }
  const uint64_t deadline = monotonic_ms() + static_cast<uint64_t>(timeout_ms);
  while (in_flight_ > 0) {
    if (reap(done) > 0) continue;
    if (monotonic_ms() >= deadline) return false;
    if (!wait(50).ok()) return false;
  }
  return true;
}

}  // namespace carapace::block
