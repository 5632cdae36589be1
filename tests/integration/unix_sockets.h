// Unix sockets for the tests and benches that talk to the VMM's host-side sockets (the hybrid
// vsock socket and its listeners, virtio-net's datagram peer): a socket connected to, bound to or
// listening at a path, and reads bounded by a silence timeout so that a guest that stops answering
// fails the check instead of hanging the test.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "common/base/unique_fd.h"

namespace carapace::testing {

inline sockaddr_un unix_address(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  return a;
}

enum class SocketEnd { kConnect, kBind, kListen };

// A Unix socket of `type` (SOCK_STREAM, SOCK_DGRAM) connected to `path`, bound to it, or bound and
// listening there; invalid on failure, with errno saying why.
inline UniqueFd unix_socket(int type, const std::string& path, SocketEnd end) {
  UniqueFd fd(socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fd;
  sockaddr_un a = unix_address(path);
  auto* sa = reinterpret_cast<sockaddr*>(&a);
  int rc =
      end == SocketEnd::kConnect ? connect(fd.get(), sa, sizeof a) : bind(fd.get(), sa, sizeof a);
  if (rc == 0 && end == SocketEnd::kListen) rc = listen(fd.get(), 4);
  if (rc != 0) return UniqueFd();
  return fd;
}

// Reads until `n` bytes, EOF, or `timeout_ms` of silence.
inline std::string read_some(int fd, size_t n, int timeout_ms) {
  std::string got;
  char buf[65536];
  while (got.size() < n) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) break;
    ssize_t r = read(fd, buf, std::min(sizeof buf, n - got.size()));
    if (r <= 0) break;
    got.append(buf, static_cast<size_t>(r));
  }
  return got;
}

// One line with its '\n', or what came before EOF or `timeout_ms` of silence.
inline std::string read_line(int fd, int timeout_ms) {
  std::string line;
  while (line.empty() || line.back() != '\n') {
    std::string c = read_some(fd, 1, timeout_ms);
    if (c.empty()) break;
    line += c;
  }
  return line;
}

}  // namespace carapace::testing
