// Unix socket files left behind by a killed process. A server that binds a path (the control
// API, the vsock device's host socket) replaces a stale socket file nobody serves, and refuses a
// live one or any other kind of file.
#pragma once

#include <string>

#include "common/base/result.h"

namespace carapace {

// Makes `path` free for a new socket: nothing there, or a socket file nobody serves is removed. A
// live server's socket or a file that is not a socket is refused (bad input).
Status remove_stale_socket(const std::string& path);

}  // namespace carapace
