// Compiles a thread role's allowlist (seccomp_policy.h) into a BPF program with libseccomp. Runs
// at build time (seccomp_gen.cpp writes every role's program into a generated header), so the VMM
// itself neither links libseccomp nor spends milliseconds compiling filters at each start.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "vmm/base/result.h"
#include "vmm/security/seccomp_policy.h"

namespace carapace {

// The program for `role`: architecture check (x86-64 only), then the role's rules; anything else
// returns SECCOMP_RET_TRAP (the VMM's SIGSYS handler reports it and dies by SIGSYS).
// `sanitizer_runtime`: also allow, for every role, what the ASan/UBSan runtime itself calls inside
// any thread (pipe2 to probe memory, /proc reads, rlimits; LeakSanitizer's exit-time tracer
// ptraces every thread); only sanitizer and fuzzing builds ask for it.
Result<std::vector<sock_filter>> compile_seccomp_filter(ThreadRole role,
                                                        bool sanitizer_runtime = false);

}  // namespace carapace
