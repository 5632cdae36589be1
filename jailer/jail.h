// `carapace jail`: the supervisor. Validates, cleans up leftovers of a dead jail with the same
// id, creates the jail folder and cgroups, clones the child into new namespaces, waits for it
// through a pidfd and removes everything when it ends, however it ends. See README.md.
#pragma once

#include "jailer/jail_config.h"

namespace carapace {

// Runs the jail to the end; returns the process exit status (the child's, 128+N for signal N,
// 1 for a host error, 2 for bad input).
int run_jail(const JailConfig& cfg);

}  // namespace carapace
