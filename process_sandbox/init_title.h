// A process sandbox's PID 1 is a clone3 of the supervisor, not an exec, so until it says
// otherwise its /proc/1/cmdline and /proc/1/environ are the supervisor's: the host binary's path,
// the daemon's state folder, the agent socket and token-file paths, the host uid and the limits.
// /proc/PID/cmdline is readable by every process of the PID namespace, ptrace rights or not.
#pragma once

#include "common/base/result.h"

namespace carapace {

// What the workload sees as PID 1's name and whole command line.
inline constexpr char kSandboxInitName[] = "carapace-init";

// Points this process's argument and environment areas at a fresh page holding only
// kSandboxInitName (and no environment), zeroes the old areas and renames the thread. Needs a
// kernel with CONFIG_CHECKPOINT_RESTORE (PR_SET_MM_MAP) and no capability; fails rather than
// leave the host's strings visible.
Status become_anonymous_init();

}  // namespace carapace
