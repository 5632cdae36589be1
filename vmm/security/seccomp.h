// Per-thread seccomp filters. Each VMM thread installs the allowlist of its role
// (seccomp_policy.h) before it does any work for the guest; a forbidden syscall is reported on
// stderr ("carapace: seccomp: ...") and the process dies by SIGSYS.
#pragma once

#include "common/base/result.h"
#include "vmm/security/seccomp_policy.h"

namespace carapace {

// Turns seccomp on for this process and installs the SIGSYS reporter. The filters themselves were
// compiled at build time (seccomp_gen.cpp). From then on every VMM thread installs its role's
// filter when it starts (apply_seccomp). Processes that never call this (tests, benchmarks) run
// unfiltered.
Status enable_seccomp();
bool seccomp_enabled();

// Installs `role`'s filter on the calling thread (and, through inheritance, on the threads it
// starts later) when seccomp is enabled; does nothing otherwise.
Status apply_seccomp(ThreadRole role);

// Test hook: with CARAPACE_SECCOMP_PROBE=<role name> in the environment (read once by
// enable_seccomp), the first thread of that role makes a forbidden syscall right after its filter
// is installed, so tests can see each role's filter kill the process. Not reachable by a guest.
void seccomp_probe_point(ThreadRole role);

}  // namespace carapace
