#pragma once

#include <string>
#include <vector>

namespace carapace {

// `carapace fork --api-sock PATH [--clones N]`: asks a running VMM (started with --api-sock) to
// fork its VM into N children that run in that VMM process; prints the API's JSON answer.
int cmd_fork(const std::vector<std::string>& args);

}  // namespace carapace
