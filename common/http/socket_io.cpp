#include "common/http/socket_io.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace carapace::http {
namespace {

// Milliseconds left until `deadline`, for poll(): 0 when passed, capped to fit an int.
int poll_timeout(Clock::time_point deadline) {
  if (deadline == Clock::time_point::max()) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return left > 1'000'000'000 ? 1'000'000'000 : static_cast<int>(left);
}

}  // namespace

IoStatus wait_readable(int fd, Clock::time_point deadline, int cancel_fd) {
  for (;;) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {cancel_fd, POLLIN, 0}};
    int n = ::poll(fds, cancel_fd >= 0 ? 2 : 1, poll_timeout(deadline));
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoStatus::kError;
    }
    if (cancel_fd >= 0 && (fds[1].revents & POLLIN)) return IoStatus::kCancelled;
    // POLLHUP/POLLERR: let the following recv() report EOF or the error.
    if (fds[0].revents != 0) return IoStatus::kOk;
    if (Clock::now() >= deadline) return IoStatus::kTimeout;
  }
}

Result<bool> wait_writable(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLOUT, 0};
  int r;
  do {
    r = ::poll(&p, 1, static_cast<int>(timeout.count()));
  } while (r < 0 && errno == EINTR);
  if (r < 0) return sys_error("poll");
  return r > 0;
}

Status send_all(int fd, std::string_view data, std::chrono::milliseconds stall_timeout) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return sys_error("send");
    if (!TRY(wait_writable(fd, stall_timeout))) return make_error("send: peer stopped reading");
  }
  return ok_status();
}

IoStatus SocketReader::fill() {
  // Drop consumed bytes so the buffer stays proportional to what is still pending.
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > kRecvChunk) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  char chunk[kRecvChunk];
  for (;;) {
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n > 0) {
      buf_.append(chunk, static_cast<size_t>(n));
      received_any_ = true;
      return IoStatus::kOk;
    }
    if (n == 0) return IoStatus::kClosed;
    if (errno == EINTR) continue;
    if (errno == ECONNRESET || errno == EPIPE) return IoStatus::kClosed;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return IoStatus::kError;
    IoStatus st = wait_readable(fd_, deadline_);
    if (st != IoStatus::kOk) return st;
  }
}

IoStatus SocketReader::read_head(std::string& head, size_t max_bytes) {
  for (;;) {
    // Skip empty lines left over before a request (a client's stray CRLF after a body).
    while (buffered() >= 2 && buf_[pos_] == '\r' && buf_[pos_ + 1] == '\n') {
      pos_ += 2;
      scanned_ = 0;
    }
    std::string_view p = pending();
    // Resume the search where the last one stopped, so a byte-at-a-time client costs linear time.
    size_t from = scanned_ >= 3 ? scanned_ - 3 : 0;
    size_t end = p.find("\r\n\r\n", from);
    if (end != std::string_view::npos && end + 2 <= max_bytes) {
      head.assign(p.substr(0, end + 2));
      pos_ += end + 4;
      scanned_ = 0;
      return IoStatus::kOk;
    }
    for (size_t i = scanned_; i < p.size(); ++i) {
      if (p[i] == '\n' && (i == 0 || p[i - 1] != '\r')) return IoStatus::kMalformed;
    }
    scanned_ = p.size();
    if (p.size() >= max_bytes) return IoStatus::kTooLong;
    IoStatus st = fill();
    if (st != IoStatus::kOk) return st;
  }
}

IoStatus SocketReader::read_some(std::string& out, size_t max) {
  if (buffered() == 0) {
    IoStatus st = fill();
    if (st != IoStatus::kOk) return st;
  }
  size_t n = std::min(max, buffered());
  out.append(buf_, pos_, n);
  pos_ += n;
  return IoStatus::kOk;
}

}  // namespace carapace::http
