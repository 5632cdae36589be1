// Listening sockets for the HTTP server: a Unix socket (the normal case: mode 0600, so only the
// owner can talk to the VM) and an optional TCP socket bound to 127.0.0.1 only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace carapace::http {

struct UnixListener {
  UniqueFd fd;
  std::string path;
  // Identity of the socket file we created, so shutdown removes it only if it is still ours.
  dev_t dev = 0;
  ino_t ino = 0;
};

// Binds and listens on `path` (non-blocking, close-on-exec). An existing socket file is removed
// only when nothing accepts connections on it (a crashed server's leftover); a live socket or a
// file of another type is an error. The socket is created with `mode` (0600: only its owner may
// connect; 0666 for a sandbox's user): the mode is set on the socket before bind() so there is no
// moment when others may connect.
Result<UnixListener> listen_unix(const std::string& path, int backlog, mode_t mode = 0600);

// Removes the listener's socket file if it is still the one listen_unix created.
void unlink_unix_listener(const UnixListener& l);

// Binds 127.0.0.1:port (0: any free port); never another address.
Result<UniqueFd> listen_tcp_loopback(uint16_t port, int backlog);

// The port a TCP socket is bound to.
Result<uint16_t> local_port(int fd);

}  // namespace carapace::http
