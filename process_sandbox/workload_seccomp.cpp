#include "process_sandbox/workload_seccomp.h"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace carapace {
namespace {

// Every CLONE_NEW* flag. CLONE_NEWTIME (0x80) lies in clone()'s exit-signal byte, so it only
// counts for unshare (clone3, which could carry it, is refused outright).
constexpr uint32_t kCloneNsFlags = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |
                                   CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET;
constexpr uint32_t kUnshareNsFlags = kCloneNsFlags | 0x00000080u /* CLONE_NEWTIME */;

#define DENY(name, why)                                         \
  WorkloadRule {                                                \
    SYS_##name, #name, EPERM, WorkloadCheck::kAlways, 0, 0, why \
  }

// The table. Grouped by what the call would give a workload; README.md lists the same groups.
constexpr WorkloadRule kRules[] = {
    // Looking into or steering other processes (the agent holds the token).
    DENY(ptrace, "inspect/steer another process"),
    DENY(process_vm_readv, "read another process's memory"),
    DENY(process_vm_writev, "write another process's memory"),
    DENY(pidfd_getfd, "steal another process's descriptors"),
    DENY(kcmp, "compare kernel objects of other processes"),
    // Mounts and the root: the jail's file system is fixed.
    DENY(mount, "mount"),
    DENY(umount2, "unmount (would reveal what is under a mount)"),
    DENY(pivot_root, "change the root"),
    DENY(chroot, "change the root"),
    DENY(move_mount, "new mount API"),
    DENY(open_tree, "new mount API"),
    DENY(fsopen, "new mount API"),
    DENY(fsmount, "new mount API"),
    DENY(fsconfig, "new mount API"),
    DENY(fspick, "new mount API"),
    DENY(mount_setattr, "new mount API"),
    DENY(open_by_handle_at, "open files by handle, around path checks"),
    DENY(name_to_handle_at, "file handles (pairs with open_by_handle_at)"),
    DENY(quotactl, "disk quotas"),
    DENY(quotactl_fd, "disk quotas"),
    DENY(swapon, "swap"),
    DENY(swapoff, "swap"),
    // Namespaces: none of the workload's own (user namespaces open much kernel surface).
    DENY(setns, "enter a namespace"),
    WorkloadRule{SYS_unshare, "unshare", EPERM, WorkloadCheck::kNamespaceFlags, 0, kUnshareNsFlags,
                 "new namespaces (other unshare flags allowed)"},
    WorkloadRule{SYS_clone, "clone", EPERM, WorkloadCheck::kNamespaceFlags, 0, kCloneNsFlags,
                 "new namespaces (threads and fork allowed)"},
    // clone3 passes its flags in memory, out of a filter's reach: ENOSYS makes glibc fall back to
    // clone, whose flags are checked above.
    WorkloadRule{SYS_clone3, "clone3", ENOSYS, WorkloadCheck::kAlways, 0, 0,
                 "flags out of reach (ENOSYS: glibc falls back to clone)"},
    // The kernel itself: code loading, BPF, keyrings, tracing, raw hardware.
    DENY(kexec_load, "load a new kernel"),
    DENY(kexec_file_load, "load a new kernel"),
    DENY(init_module, "load a kernel module"),
    DENY(finit_module, "load a kernel module"),
    DENY(delete_module, "unload a kernel module"),
    DENY(bpf, "BPF programs and maps"),
    DENY(perf_event_open, "perf events (a long CVE history)"),
    DENY(lookup_dcookie, "profiling"),
    DENY(keyctl, "kernel keyrings (not namespaced)"),
    DENY(add_key, "kernel keyrings"),
    DENY(request_key, "kernel keyrings"),
    DENY(userfaultfd, "stall the kernel at chosen points (exploit aid)"),
    DENY(io_uring_setup, "io_uring (a long CVE history)"),
    DENY(io_uring_enter, "io_uring"),
    DENY(io_uring_register, "io_uring"),
    DENY(iopl, "raw port I/O"),
    DENY(ioperm, "raw port I/O"),
    DENY(modify_ldt, "segment descriptors (exploit aid)"),
    DENY(syslog, "the kernel log"),
    DENY(acct, "process accounting"),
    DENY(vhangup, "hang up the terminal"),
    DENY(reboot, "reboot"),
    DENY(settimeofday, "the host's clock (not namespaced)"),
    DENY(clock_settime, "the host's clock"),
    DENY(clock_adjtime, "the host's clock"),
    DENY(adjtimex, "the host's clock"),
    DENY(memfd_secret, "memory hidden from the kernel's own checks"),
    WorkloadRule{SYS_personality, "personality", EPERM, WorkloadCheck::kPersonality, 0, 0,
                 "only PER_LINUX and the query (others: ASLR off, READ_IMPLIES_EXEC)"},
};

#undef DENY

sock_filter stmt(uint16_t code, uint32_t k) {
  return BPF_STMT(code, k);
}
sock_filter jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
  return BPF_JUMP(code, k, jt, jf);
}

constexpr uint32_t kNrOffset = offsetof(seccomp_data, nr);
constexpr uint32_t kArchOffset = offsetof(seccomp_data, arch);
// The low 32 bits of argument i (x86-64 is little-endian).
constexpr uint32_t arg_low(int i) {
  return static_cast<uint32_t>(offsetof(seccomp_data, args) + 8 * i);
}
constexpr uint32_t kX32SyscallBit = 0x40000000u;

uint32_t ret_errno(int e) {
  return SECCOMP_RET_ERRNO | (static_cast<uint32_t>(e) & SECCOMP_RET_DATA);
}

// The instructions after the syscall-number match; every path ends in a return, so the next
// rule can rely on the accumulator still holding the number.
std::vector<sock_filter> rule_body(const WorkloadRule& r) {
  switch (r.check) {
    case WorkloadCheck::kAlways:
      return {stmt(BPF_RET | BPF_K, ret_errno(r.error))};
    case WorkloadCheck::kNamespaceFlags:
      return {stmt(BPF_LD | BPF_W | BPF_ABS, arg_low(r.arg)),
              jump(BPF_JMP | BPF_JSET | BPF_K, r.mask, 0, 1),
              stmt(BPF_RET | BPF_K, ret_errno(r.error)), stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    case WorkloadCheck::kPersonality:
      return {stmt(BPF_LD | BPF_W | BPF_ABS, arg_low(0)), jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0),
              jump(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, 1, 0),
              stmt(BPF_RET | BPF_K, ret_errno(r.error)), stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  }
  return {stmt(BPF_RET | BPF_K, ret_errno(EPERM))};
}

}  // namespace

std::span<const WorkloadRule> workload_seccomp_rules() {
  return kRules;
}

std::vector<sock_filter> build_workload_seccomp_filter() {
  std::vector<sock_filter> prog = {
      stmt(BPF_LD | BPF_W | BPF_ABS, kArchOffset),
      jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      stmt(BPF_RET | BPF_K, ret_errno(EPERM)),
      stmt(BPF_LD | BPF_W | BPF_ABS, kNrOffset),
      jump(BPF_JMP | BPF_JGE | BPF_K, kX32SyscallBit, 0, 1),
      stmt(BPF_RET | BPF_K, ret_errno(EPERM)),
  };
  for (const WorkloadRule& r : kRules) {
    std::vector<sock_filter> body = rule_body(r);
    prog.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(r.nr), 0,
                        static_cast<uint8_t>(body.size())));
    prog.insert(prog.end(), body.begin(), body.end());
  }
  prog.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  return prog;
}

Status install_workload_seccomp() {
  std::vector<sock_filter> prog = build_workload_seccomp_filter();
  sock_fprog fprog{static_cast<unsigned short>(prog.size()), prog.data()};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return sys_error("PR_SET_NO_NEW_PRIVS");
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0)
    return sys_error("seccomp(SECCOMP_SET_MODE_FILTER) for the workload");
  return ok_status();
}

}  // namespace carapace
