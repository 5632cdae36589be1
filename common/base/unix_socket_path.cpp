#include "common/base/unix_socket_path.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cstring>

namespace carapace {

Result<UnixSocketTarget> unix_socket_target(const std::string& path, bool follow_last_link) {
  UnixSocketTarget t;
  t.addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof t.addr.sun_path || path.find('\0') != std::string::npos)
    return as_invalid_input(make_error("socket path empty or too long: " + path));
  std::string name = path;
  if (!follow_last_link) {
    t.pin.reset(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!t.pin.valid()) return sys_error("connect " + path);
    struct stat st {};
    if (::fstat(t.pin.get(), &st) != 0) return sys_error("connect " + path);
    if (S_ISLNK(st.st_mode))
      return as_invalid_input(
          make_error("connect " + path + ": is a symbolic link (refused in a sandbox's folder)"));
    if (!S_ISSOCK(st.st_mode))
      return as_invalid_input(make_error("connect " + path + ": not a socket"));
    name = "/proc/self/fd/" + std::to_string(t.pin.get());
  }
  std::memcpy(t.addr.sun_path, name.c_str(), name.size() + 1);
  return t;
}

}  // namespace carapace
