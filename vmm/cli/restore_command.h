// `carapace restore --snapshot DIR [--clones N] ...`: restores a snapshot into one or more VMs in
// this process and runs them concurrently (see kRestoreUsage). Compiled into carapace_snapshot.
#pragma once

#include <string>
#include <vector>

namespace carapace {

// `args` are the words after "restore". Exit status: the worst clone's; 2 for bad usage or a
// bad, corrupt or incompatible snapshot (nothing started).
int cmd_restore(const std::vector<std::string>& args);

}  // namespace carapace
