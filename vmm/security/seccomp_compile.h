// Compiles a thread role's allowlist (seccomp_policy.h) into a BPF program with libseccomp. Runs
// at build time (seccomp_gen.cpp writes every role's program into a generated header), so the VMM
// itself neither links libseccomp nor spends milliseconds compiling filters at each start.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "common/base/result.h"
#include "vmm/security/seccomp_policy.h"

namespace carapace {

// The program for `role`: architecture check (x86-64 only), then the role's rules; anything else
// returns SECCOMP_RET_TRAP (the VMM's SIGSYS handler reports it and dies by SIGSYS).
// `sanitizer_runtime` (ASan/UBSan and fuzzing builds only): the runtimes make calls of their own
// in every thread (LeakSanitizer even ptraces them all at exit), so there an unlisted call is
// only logged (SECCOMP_RET_LOG); personality(2), the tests' probe, still traps.
Result<std::vector<sock_filter>> compile_seccomp_filter(ThreadRole role,
                                                        bool sanitizer_runtime = false);

}  // namespace carapace
