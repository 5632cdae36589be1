#include "common/base/byte_relay.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

namespace carapace {
namespace {

constexpr size_t kBufferBytes = 128 * 1024;
constexpr int kPumpRounds = 8;

// One direction: bytes read from `from`, not yet written to `to`. The buffer is allocated on the
// first read and never zeroed (only what recv() wrote is sent): a short exchange -- one small
// response, the usual forwarded GET -- touches a few pages of it, not all 128 KiB, and a
// direction that is never read (`only_down`) has none.
struct Direction {
  int from;
  int to;
  std::unique_ptr<char[]> buf = nullptr;
  size_t begin = 0;
  size_t end = 0;
  bool eof = false;   // `from` said EOF (or is not read at all)
  bool shut = false;  // the EOF was passed on to `to`
  uint64_t* counter;

  bool empty() const { return begin == end; }
  bool done() const { return shut; }

  // false on a socket error.
  bool read_some() {
    if (!buf) buf = std::make_unique_for_overwrite<char[]>(kBufferBytes);
    ssize_t n = ::recv(from, buf.get(), kBufferBytes, MSG_DONTWAIT);
    if (n > 0) {
      begin = 0;
      end = static_cast<size_t>(n);
      return true;
    }
    if (n == 0) {
      eof = true;
      return true;
    }
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  }

  bool write_some() {
    ssize_t n = ::send(to, buf.get() + begin, end - begin, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n >= 0) {
      begin += static_cast<size_t>(n);
      *counter += static_cast<uint64_t>(n);
      return true;
    }
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  }

  // Moves what it can without waiting: a read when the buffer is empty, a write when it is not,
  // until a call would block -- so a chunk read is sent at once, not after another poll -- or
  // kPumpRounds rounds have passed (the other direction's turn). false on a socket error.
  bool pump() {
    for (int round = 0; round < kPumpRounds; round++) {
      if (empty()) {
        if (eof) return true;
        if (!read_some()) return false;
        if (empty()) return true;  // nothing there yet, or EOF
      }
      const size_t left = end - begin;
      if (!write_some()) return false;
      if (end - begin == left || !empty()) return true;  // the peer's buffer is full
    }
    return true;
  }

  void pass_eof() {
    if (eof && empty() && !shut) {
      ::shutdown(to, SHUT_WR);
      shut = true;
    }
  }
};

}  // namespace

const char* relay_end_name(RelayEnd e) {
  switch (e) {
    case RelayEnd::kClosed:
      return "closed";
    case RelayEnd::kReset:
      return "reset";
    case RelayEnd::kIdle:
      return "idle";
    case RelayEnd::kStopped:
      return "stopped";
  }
  return "?";
}

RelayEnd run_relay(int client, int upstream, int stop_fd, std::chrono::milliseconds idle,
                   bool only_down, RelayBytes& bytes,
                   std::chrono::milliseconds upstream_closed_idle) {
  Direction up{.from = client, .to = upstream, .counter = &bytes.up};
  Direction down{.from = upstream, .to = client, .counter = &bytes.down};
  if (only_down) up.eof = up.shut = true;  // never read; upstream keeps its write side
  const int idle_ms = static_cast<int>(idle.count());
  const int closed_idle_ms = static_cast<int>(upstream_closed_idle.count());
  // A socket that hung up keeps reporting POLLHUP; one we want nothing from is then left out of
  // the poll, or the loop would spin until the other side moves.
  bool client_hup = false, upstream_hup = false;
  while (!(up.done() && down.done())) {
    // Each socket: read it when its direction's buffer is empty, write it when the opposite
    // direction holds bytes for it.
    short client_events = 0, upstream_events = 0;
    if (!up.eof && up.empty()) client_events |= POLLIN;
    if (!down.empty()) client_events |= POLLOUT;
    if (!down.eof && down.empty()) upstream_events |= POLLIN;
    if (!up.empty()) upstream_events |= POLLOUT;
    pollfd fds[3] = {{client_hup && !client_events ? -1 : client, client_events, 0},
                     {upstream_hup && !upstream_events ? -1 : upstream, upstream_events, 0},
                     {stop_fd, POLLIN, 0}};
    const int timeout_ms = down.done() && idle_ms > closed_idle_ms ? closed_idle_ms : idle_ms;
    int n = ::poll(fds, stop_fd >= 0 ? 3 : 2, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return RelayEnd::kReset;
    }
    if (n == 0) return RelayEnd::kIdle;
    if (stop_fd >= 0 && (fds[2].revents & POLLIN)) return RelayEnd::kStopped;
    client_hup = client_hup || (fds[0].revents & POLLHUP);
    upstream_hup = upstream_hup || (fds[1].revents & POLLHUP);
    // POLLHUP/POLLERR show up as a read or write that fails or returns 0.
    if (!up.pump() || !down.pump()) return RelayEnd::kReset;
    up.pass_eof();
    down.pass_eof();
  }
  return RelayEnd::kClosed;
}

}  // namespace carapace
