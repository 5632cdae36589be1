// Connecting to a Unix socket whose folder someone less trusted can write. The daemon talks to
// each VMM through sockets the VMM made in its own folder; a jailed, compromised VMM could swap
// such a socket for a symbolic link to some host socket (a container runtime's, say) and have the
// daemon (root) connect there. With `follow_last_link` false, the last component is opened
// O_PATH | O_NOFOLLOW, must be a socket, and the address handed to connect() names that very
// descriptor (/proc/self/fd/N): nothing swapped in after the check can redirect the connection.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <string>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace carapace {

struct UnixSocketTarget {
  sockaddr_un addr{};
  socklen_t len = sizeof(sockaddr_un);
  UniqueFd pin;  // the O_PATH descriptor the address names; keep it open until connect() returns
};

// The address to connect() to for the socket at `path`. Invalid input: an empty or too long
// path; with `follow_last_link` false also a last component that is a link or not a socket.
Result<UnixSocketTarget> unix_socket_target(const std::string& path, bool follow_last_link);

}  // namespace carapace
