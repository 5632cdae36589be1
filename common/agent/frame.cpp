#include "common/agent/frame.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>

#include "common/agent/wire.h"

namespace carapace::agent {
namespace {

using Clock = std::chrono::steady_clock;

enum class ReadEnd { kDone, kEof, kTimeout, kError };

// Reads exactly n bytes into buf. Until the first byte of the frame has arrived the wait is
// idle_ms; from then on everything must arrive before *deadline (set here on that first byte).
ReadEnd read_exact(int fd, char* buf, size_t n, const FrameLimits& limits,
                   std::optional<Clock::time_point>* deadline, size_t* got) {
  *got = 0;
  while (*got < n) {
    int wait = limits.idle_ms;
    if (deadline->has_value()) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(**deadline - Clock::now());
      if (left.count() <= 0) return ReadEnd::kTimeout;
      wait = static_cast<int>(left.count());
    }
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, wait);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ReadEnd::kError;
    if (r == 0) return ReadEnd::kTimeout;
    ssize_t k = ::read(fd, buf + *got, n - *got);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k < 0) return ReadEnd::kError;
    if (k == 0) return ReadEnd::kEof;
    if (!deadline->has_value())
      *deadline = Clock::now() + std::chrono::milliseconds(limits.stall_ms);
    *got += static_cast<size_t>(k);
  }
  return ReadEnd::kDone;
}

}  // namespace

const char* frame_status_name(FrameStatus s) {
  switch (s) {
    case FrameStatus::kOk:
      return "ok";
    case FrameStatus::kEof:
      return "end of stream";
    case FrameStatus::kTruncated:
      return "stream ended inside a frame";
    case FrameStatus::kEmpty:
      return "frame of length 0";
    case FrameStatus::kTooLarge:
      return "frame larger than the limit";
    case FrameStatus::kTimeout:
      return "timed out waiting for a frame";
    case FrameStatus::kIoError:
      return "I/O error";
  }
  return "?";
}

FrameStatus read_frame(int fd, const FrameLimits& limits, std::string* payload) {
  std::optional<Clock::time_point> deadline;
  unsigned char hdr[kFrameHeaderBytes];
  size_t got = 0;
  switch (read_exact(fd, reinterpret_cast<char*>(hdr), sizeof hdr, limits, &deadline, &got)) {
    case ReadEnd::kDone:
      break;
    case ReadEnd::kEof:
      return got == 0 ? FrameStatus::kEof : FrameStatus::kTruncated;
    case ReadEnd::kTimeout:
      return FrameStatus::kTimeout;
    case ReadEnd::kError:
      return FrameStatus::kIoError;
  }
  uint32_t len =
      uint32_t{hdr[0]} | uint32_t{hdr[1]} << 8 | uint32_t{hdr[2]} << 16 | uint32_t{hdr[3]} << 24;
  if (len == 0) return FrameStatus::kEmpty;
  if (len > limits.max_bytes) return FrameStatus::kTooLarge;
  payload->resize(len);
  switch (read_exact(fd, payload->data(), len, limits, &deadline, &got)) {
    case ReadEnd::kDone:
      return FrameStatus::kOk;
    case ReadEnd::kEof:
      return FrameStatus::kTruncated;
    case ReadEnd::kTimeout:
      return FrameStatus::kTimeout;
    case ReadEnd::kError:
      return FrameStatus::kIoError;
  }
  return FrameStatus::kIoError;
}

std::string encode_frame(std::string_view payload) {
  auto len = static_cast<uint32_t>(payload.size());
  std::string out;
  out.reserve(kFrameHeaderBytes + payload.size());
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  out.append(payload);
  return out;
}

Status send_all(int fd, std::string_view bytes) {
  bool is_socket = true;
  while (!bytes.empty()) {
    ssize_t n = is_socket ? ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL)
                          : ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == ENOTSOCK && is_socket) {
      is_socket = false;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    // EAGAIN here means SO_SNDTIMEO expired: the peer stopped reading.
    if (n < 0 && errno == EAGAIN) return sys_error("send", ETIMEDOUT);
    if (n < 0) return sys_error("send");
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

Status write_frame(int fd, std::string_view payload) {
  if (payload.empty() || payload.size() > kMaxFrameBytes)
    return make_error("frame of " + std::to_string(payload.size()) + " bytes is outside 1.." +
                      std::to_string(kMaxFrameBytes));
  return send_all(fd, encode_frame(payload));
}

}  // namespace carapace::agent
