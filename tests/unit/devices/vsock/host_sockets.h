// Host-side socket helpers for the vsock tests, fuzzer and benchmark: Unix stream sockets
// playing the host processes, and an fd counter for leak checks.
#pragma once

#include <dirent.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/unique_fd.h"

namespace carapace::vsock::fake {

inline size_t count_open_fds() {
  size_t n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n - 1;  // the directory's own fd
}

// Sockets and timerfds only: what the device opens. Unlike count_open_fds() this ignores what a
// sanitizer's symbolizer or the fuzzing engine open on their own.
inline size_t count_socket_fds() {
  size_t n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char target[64] = {};
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    if (::readlink(link.c_str(), target, sizeof target - 1) < 0) continue;
    const std::string_view t(target);
    n += t.starts_with("socket:") || t == "anon_inode:[timerfd]";
  }
  ::closedir(d);
  return n;
}

inline sockaddr_un unix_addr(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  return a;
}

inline UniqueFd unix_connect(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un a = unix_addr(path);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) return UniqueFd();
  return fd;
}

inline UniqueFd unix_listen(const std::string& path, int backlog = 64) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un a = unix_addr(path);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) return UniqueFd();
  if (::listen(fd.get(), backlog) < 0) return UniqueFd();
  return fd;
}

inline void send_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    s.remove_prefix(static_cast<size_t>(n));
  }
}

// Reads what is there (waiting up to `timeout_ms` for the first byte), at most `max` bytes.
inline std::string read_some(int fd, size_t max = 65536, int timeout_ms = 1000) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return {};
  std::string out(max, '\0');
  const ssize_t n = ::recv(fd, out.data(), max, MSG_DONTWAIT);
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

// True when the peer closed (read gives 0 or an error) within `timeout_ms`.
inline bool sees_eof(int fd, int timeout_ms = 1000) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return false;
  char c;
  const ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN);
}

inline std::vector<uint8_t> bytes_of(std::string_view s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}
inline std::string str(const std::vector<uint8_t>& v) {
  return std::string(v.begin(), v.end());
}

}  // namespace carapace::vsock::fake
