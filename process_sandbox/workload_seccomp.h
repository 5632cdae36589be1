// The seccomp filter of the process isolation back end's workload: the guest agent
// and everything it runs, in a jail on the host kernel. Unlike the VMM's per-thread allowlists
// (seccomp_policy.h) this is a denylist: the workload is arbitrary Linux software, so everything
// is allowed except the kernel attack surface a sandboxed program has no business with (ptrace,
// mount, namespaces, kexec, bpf, modules, keyrings, userfaultfd, io_uring, perf, ...). Denied calls
// fail with EPERM (clone3: ENOSYS, so glibc falls back to clone), never kill: tools fail cleanly.
// The table is in workload_seccomp.cpp; the BPF program is built from it at run time (a few
// dozen instructions, no libseccomp).
#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <span>
#include <vector>

#include "common/base/result.h"

namespace carapace {

enum class WorkloadCheck : uint8_t {
  kAlways,          // denied whatever the arguments
  kNamespaceFlags,  // denied when argument `arg` has a CLONE_NEW* bit (clone, unshare)
  kPersonality,     // denied unless arg0 is 0 (PER_LINUX) or 0xffffffff (query)
};

struct WorkloadRule {
  long nr;
  const char* name;
  int error;  // errno returned (EPERM, or ENOSYS for clone3)
  WorkloadCheck check = WorkloadCheck::kAlways;
  uint8_t arg = 0;       // kNamespaceFlags: which argument holds the flags
  uint32_t mask = 0;     // kNamespaceFlags: the bits that deny
  const char* why = "";  // one line for the table in README.md
};

std::span<const WorkloadRule> workload_seccomp_rules();

// The filter: x86-64 only (any other audit arch, and the x32 syscall range, get EPERM: a
// denylist must not be sidestepped through another ABI's syscall numbers), then the rules in
// order, then allow.
std::vector<sock_filter> build_workload_seccomp_filter();

// Sets PR_SET_NO_NEW_PRIVS and installs the filter on the calling thread (inherited across fork
// and execve).
Status install_workload_seccomp();

}  // namespace carapace
