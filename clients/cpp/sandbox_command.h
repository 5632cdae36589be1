// `carapace sandbox ...`: the sandbox daemon's API (docs/api.md) from the command line.
#pragma once

#include <string>
#include <vector>

namespace carapace {

// Exit status: 0, the command's own status for exec, 2 when the daemon refused the request (4xx)
// or the arguments were bad, 1 for transport and daemon failures.
int cmd_sandbox(const std::vector<std::string>& args);

}  // namespace carapace
