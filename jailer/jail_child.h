// The jailed child, between clone3 and execve: builds the minimal root in its new mount namespace,
// pivots into it, applies rlimits, drops to the unprivileged ids with no capabilities and
// PR_SET_NO_NEW_PRIVS, and execs. It runs as root until the drop; every failure is written as one
// line to the error pipe, which the supervisor prints.
#pragma once

#include <string>
#include <vector>

#include "jailer/elf_deps.h"
#include "jailer/jail_config.h"

namespace carapace {

struct JailChildPlan {
  const JailConfig* cfg = nullptr;
  std::vector<RuntimeFile> runtime;  // interpreter and libraries of the exec file
  int sync_fd = -1;                  // read end: one byte once we are in the cgroups
  int err_fd = -1;                   // write end (O_CLOEXEC): empty at EOF means exec succeeded
};

[[noreturn]] void jail_child_main(const JailChildPlan& plan);

}  // namespace carapace
