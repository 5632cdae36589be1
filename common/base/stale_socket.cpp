#include "common/base/stale_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/base/unique_fd.h"

namespace carapace {

namespace {

// Whether a server accepts connections on the socket file `path` right now. A non-blocking probe:
// a live server with a full backlog answers EAGAIN instead of blocking us.
Result<bool> someone_listens(const sockaddr_un& addr, const std::string& path) {
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!probe.valid()) return sys_error("socket");
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0)
    return true;
  if (errno == EAGAIN || errno == EINPROGRESS) return true;
  if (errno == ECONNREFUSED) return false;
  return sys_error("probe " + path);
}

}  // namespace

Status remove_stale_socket(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    return as_invalid_input(make_error("socket path empty or too long: " + path));
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return as_invalid_input(make_error(path + " exists and is not a socket"));
    if (TRY(someone_listens(addr, path)))
      return as_invalid_input(make_error(path + " is in use by a running server"));
    if (::unlink(path.c_str()) < 0 && errno != ENOENT)
      return sys_error("remove stale socket " + path);
  } else if (errno != ENOENT) {
    return sys_error("stat " + path);
  }
  return {};
}

}  // namespace carapace
