#include "common/http/listener.h"

#include "common/base/stale_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

namespace carapace::http {
namespace {

Result<sockaddr_un> unix_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    return as_invalid_input(make_error("socket path empty or too long: " + path));
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

// The umask may have taken bits off the mode bind() gave the file: set it again, without following
// a link, since the folder may be one another user can write (a jailed VMM's) and swap the socket
// for a link in between. glibc does that through /proc/self/fd; where no /proc is mounted (a VMM
// in its chroot, whose folder nobody else writes) it falls back to chmod on a checked socket.
bool set_mode_nofollow(const std::string& path, mode_t mode) {
  if (::fchmodat(AT_FDCWD, path.c_str(), mode, AT_SYMLINK_NOFOLLOW) == 0) return true;
  if (errno != ENOTSUP && errno != EOPNOTSUPP) return false;
  struct stat st {};
  if (::lstat(path.c_str(), &st) < 0) return false;
  if (!S_ISSOCK(st.st_mode)) {
    errno = ELOOP;
    return false;
  }
  return ::chmod(path.c_str(), mode) == 0;
}

}  // namespace

Result<UnixListener> listen_unix(const std::string& path, int backlog, mode_t mode) {
  sockaddr_un addr = TRY(unix_address(path));
  TRY_STATUS(carapace::remove_stale_socket(path));
  struct stat st {};

  UnixListener l;
  l.path = path;
  l.fd.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!l.fd.valid()) return sys_error("socket");
  // Linux creates the socket file with the socket inode's mode (less the umask): setting it
  // before bind() leaves no window in which another user could connect.
  if (::fchmod(l.fd.get(), mode) < 0) return sys_error("fchmod socket");
  if (::bind(l.fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0)
    return sys_error("bind " + path);
  if (!set_mode_nofollow(path, mode) || ::lstat(path.c_str(), &st) < 0 || !S_ISSOCK(st.st_mode)) {
    int err = errno;
    ::unlink(path.c_str());
    return sys_error("chmod " + path, err);
  }
  l.dev = st.st_dev;
  l.ino = st.st_ino;
  if (::listen(l.fd.get(), backlog) < 0) {
    int err = errno;
    ::unlink(path.c_str());
    return sys_error("listen " + path, err);
  }
  return l;
}

void unlink_unix_listener(const UnixListener& l) {
  struct stat st {};
  if (l.path.empty() || ::lstat(l.path.c_str(), &st) < 0) return;
  if (st.st_dev == l.dev && st.st_ino == l.ino) ::unlink(l.path.c_str());
}

Result<UniqueFd> listen_tcp_loopback(uint16_t port, int backlog) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error("socket");
  int one = 1;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
    return sys_error("setsockopt SO_REUSEADDR");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0)
    return sys_error("bind 127.0.0.1:" + std::to_string(port));
  if (::listen(fd.get(), backlog) < 0) return sys_error("listen");
  return fd;
}

Result<uint16_t> local_port(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) < 0)
    return sys_error("getsockname");
  return static_cast<uint16_t>(ntohs(addr.sin_port));
}

}  // namespace carapace::http
