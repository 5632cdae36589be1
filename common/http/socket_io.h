// Deadline-bound I/O on non-blocking stream sockets, shared by the server and the client. Every
// wait is a poll() with the time left until a deadline, so no peer can hold a thread longer than
// the deadline it was given; every buffer has a cap, so no peer can grow memory without bound.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "common/base/result.h"

namespace carapace::http {

using Clock = std::chrono::steady_clock;

enum class IoStatus {
  kOk,
  kClosed,     // orderly EOF (or reset) from the peer
  kTimeout,    // the deadline passed
  kTooLong,    // the head outgrew its cap
  kMalformed,  // a head line ended in a bare LF
  kError,      // any other socket error
  kCancelled,  // the cancel fd became readable
};

// Waits until `fd` is readable (data or EOF). With cancel_fd >= 0, returns kCancelled as soon as
// that fd is readable, even while `fd` is not.
IoStatus wait_readable(int fd, Clock::time_point deadline, int cancel_fd = -1);

// Waits up to `timeout` for `fd` to become writable (a connect finishing, room to send), EINTR
// retried: false when the time ran out. A poll() failure is a host error.
Result<bool> wait_writable(int fd, std::chrono::milliseconds timeout);

// Writes all of `data` (MSG_NOSIGNAL: a gone peer is an error, not SIGPIPE). Fails when the peer
// accepts no byte for `stall_timeout`, so a client that stops reading cannot pin the writer.
Status send_all(int fd, std::string_view data, std::chrono::milliseconds stall_timeout);

// A read buffer over one socket. It never holds more than the cap of the current read plus one
// recv() worth of bytes.
class SocketReader {
 public:
  static constexpr size_t kRecvChunk = 16 * 1024;

  explicit SocketReader(int fd) : fd_(fd) {}

  void set_deadline(Clock::time_point deadline) { deadline_ = deadline; }

  // Reads a message head: lines up to and including the empty line. Empty lines before the head
  // are skipped (RFC 9112 2.2). On kOk, `head` holds every line with its CRLF except the final
  // empty one. kTooLong when max_bytes pass without the empty line; kMalformed on a bare LF
  // (answered at once instead of waiting for a CRLF CRLF that will never come).
  IoStatus read_head(std::string& head, size_t max_bytes);

  // Appends up to `max` bytes: buffered ones first, else one recv().
  IoStatus read_some(std::string& out, size_t max);

  // Gives back the last `n` bytes handed out by read_some (a decoder that read past the end of
  // its message). Only valid right after that read_some.
  void unread(size_t n) { pos_ -= n; }

  // Bytes received but not yet consumed.
  size_t buffered() const { return buf_.size() - pos_; }
  std::string_view pending() const { return std::string_view(buf_).substr(pos_); }
  // Whether any byte was ever received.
  bool received_any() const { return received_any_; }

 private:
  IoStatus fill();

  int fd_;
  std::string buf_;
  size_t pos_ = 0;
  size_t scanned_ = 0;  // bytes of pending() already searched for the end of a head
  bool received_any_ = false;
  Clock::time_point deadline_ = Clock::time_point::max();
};

}  // namespace carapace::http
