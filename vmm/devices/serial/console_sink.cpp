#include "vmm/devices/serial/console_sink.h"
#include "common/base/log.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>

namespace carapace {

namespace {
// The writer wakes on a newline or once this much is pending, so lines appear promptly without
// a system call per byte.
constexpr size_t kFlushThreshold = 4096;
}  // namespace

ConsoleSink::ConsoleSink(int fd, bool owned, size_t capacity, uint64_t max_total, ThreadSetup setup)
    : fd_(fd), capacity_(capacity), max_total_(max_total) {
  if (owned) owned_fd_.reset(fd);
  if (fd_ >= 0)
    writer_ = std::thread([this, setup = std::move(setup)] {
      // A console whose thread cannot be set up (filtered) is not started: the guest's output
      // would be written by an unconfined thread. The drop counter shows it.
      if (setup) {
        Status s = setup();
        if (!s.ok()) {
          LOG_ERROR("console: %s", s.error().describe().c_str());
          return;
        }
      }
      writer_loop();
    });
}

ConsoleSink::~ConsoleSink() {
  close();
}

Result<std::unique_ptr<ConsoleSink>> ConsoleSink::open_file(const std::string& path,
                                                            uint64_t max_total, ThreadSetup setup) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return sys_error("console: cannot open " + path);
  return std::make_unique<ConsoleSink>(fd, true, kDefaultCapacity, max_total, std::move(setup));
}

void ConsoleSink::put(uint8_t byte) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ < 0 || closing_ || pending_.size() >= capacity_ ||
        (max_total_ != 0 && accepted_ >= max_total_)) {
      ++dropped_;
      return;
    }
    ++accepted_;
    // The first byte wakes the writer into a short timed wait, so a partial line (a prompt)
    // still appears; a newline or a full chunk makes it write at once.
    wake = pending_.empty();
    pending_.push_back(static_cast<char>(byte));
    if (byte == '\n' || pending_.size() >= kFlushThreshold) flush_now_ = wake = true;
  }
  if (wake) cv_.notify_one();
}

void ConsoleSink::writer_loop() {
  std::string chunk;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return closing_ || !pending_.empty(); });
    // A partial line waits briefly for its newline, so lines go out in one write.
    if (!closing_ && !flush_now_)
      cv_.wait_for(lock, std::chrono::milliseconds(20), [this] { return closing_ || flush_now_; });
    if (pending_.empty()) {
      if (closing_) return;
      continue;
    }
    chunk.swap(pending_);
    flush_now_ = false;
    lock.unlock();
    size_t off = write_out(chunk);
    lock.lock();
    written_ += off;
    dropped_ += chunk.size() - off;
    chunk.clear();
  }
}

size_t ConsoleSink::write_out(const std::string& chunk) {
  size_t off = 0;
  while (off < chunk.size()) {
    // Wait for room rather than block in write(): a reader that never drains (a paused pager)
    // must not keep close() - and so the VMM's exit - waiting forever.
    pollfd p{fd_, POLLOUT, 0};
    int r = ::poll(&p, 1, 100);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || (r > 0 && (p.revents & (POLLERR | POLLNVAL)))) break;
    if (r == 0) {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_ && std::chrono::steady_clock::now() >= give_up_at_) break;
      continue;
    }
    // At most PIPE_BUF bytes: a pipe that reports room takes that much without blocking.
    size_t len = std::min<size_t>(chunk.size() - off, PIPE_BUF);
    ssize_t n = ::write(fd_, chunk.data() + off, len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // reader gone: the rest is counted as dropped
    off += static_cast<size_t>(n);
  }
  return off;
}

void ConsoleSink::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return;
    closing_ = true;
    give_up_at_ = std::chrono::steady_clock::now() + kCloseGrace;
  }
  cv_.notify_one();
  if (writer_.joinable()) writer_.join();
}

uint64_t ConsoleSink::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

uint64_t ConsoleSink::written() const {
  std::lock_guard<std::mutex> lock(mu_);
  return written_;
}

}  // namespace carapace
