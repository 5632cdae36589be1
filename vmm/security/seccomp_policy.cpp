#include "vmm/security/seccomp_policy.h"

#include <sys/syscall.h>

namespace carapace {

namespace {

constexpr uint8_t M = 1 << static_cast<int>(ThreadRole::kMain);
constexpr uint8_t L = 1 << static_cast<int>(ThreadRole::kEventLoop);
constexpr uint8_t V = 1 << static_cast<int>(ThreadRole::kVcpu);
constexpr uint8_t C = 1 << static_cast<int>(ThreadRole::kConsole);
constexpr uint8_t F = 1 << static_cast<int>(ThreadRole::kFs);
constexpr uint8_t kAll = M | L | V | C | F;

#define RULE(name, roles)    \
  SyscallRule {              \
    SYS_##name, #name, roles \
  }
#define RULE_IF(name, roles, check)           \
  SyscallRule {                               \
    SYS_##name, #name, roles, ArgCheck::check \
  }

// Why each line is there, where it is not obvious:
// - every thread: memory (malloc), locks (futex), time, signals (the vCPU kick, the SIGSYS report
//   itself), its own exit, and logging to stderr.
// - main threads are created first and pass their filter on to every thread they start later
//   (filters stack), so kMain also lists what the other roles need.
constexpr SyscallRule kRules[] = {
    // Memory, threads, time, signals: every thread.
    RULE(read, kAll),
    RULE(write, kAll),
    RULE(writev, kAll),
    RULE(close, kAll),
    RULE(futex, kAll),
    RULE(mmap, kAll),
    RULE(munmap, kAll),
    RULE(mprotect, kAll),
    RULE(mremap, kAll),
    RULE(madvise, kAll),
    RULE(brk, kAll),
    RULE(clock_gettime, kAll),
    RULE(clock_nanosleep, kAll),
    RULE(nanosleep, kAll),
    RULE(sched_yield, kAll),
    RULE(getpid, kAll),
    RULE(gettid, kAll),
    RULE(tgkill, kAll),  // vCPU kicks; the SIGSYS report re-raising its signal
    RULE(rt_sigprocmask, kAll),
    RULE(rt_sigreturn, kAll),
    RULE(rt_sigaction, kAll),  // the SIGSYS report restores the default action
    RULE(restart_syscall, kAll),
    RULE(exit, kAll),
    RULE(exit_group, kAll),
    RULE(getrandom, kAll),  // virtio-rng, hash seeds
    RULE(fstat, kAll),
    RULE(newfstatat, kAll),
    RULE(lseek, kAll),

    // vCPU threads: KVM_RUN and the vCPU's register ioctls, nothing else through ioctl.
    RULE_IF(ioctl, V, kKvmIoctl),
    RULE(epoll_ctl, M | L | V),  // devices activated by a guest register write watch their fds
    RULE(eventfd2, M | L | V),
    RULE(fcntl, M | L | V | F),  // virtio-fs: O_APPEND / O_NONBLOCK of an open file
    RULE(io_uring_setup, M | L | V),
    RULE(io_uring_register, M | L | V),
    RULE(io_uring_enter, M | L | V),

    // Event loop: device back ends. A virtio-fs thread is an event loop of its own.
    RULE(epoll_wait, M | L | F),
    RULE(epoll_pwait, M | L | F),
    RULE(readv, M | L),
    RULE(preadv, M | L | F),   // block I/O; virtio-fs READ
    RULE(pwritev, M | L | F),  // block I/O; virtio-fs WRITE
    RULE(pread64, M | L),
    RULE(pwrite64, M | L),
    RULE(fsync, M | L | F),
    RULE(fdatasync, M | L | F),
    RULE(fallocate, M | L | F),  // block DISCARD / WRITE_ZEROES; virtio-fs FALLOCATE
    RULE(sendmsg, M | L),
    RULE(recvmsg, M | L),
    RULE(sendto, M | L | V),
    RULE(recvfrom, M | L | V),        // devices start their RX on the vCPU that activates them
    RULE(accept4, M | L),             // vsock: host processes connecting to the VM's socket
    RULE_IF(socket, L, kUnixSocket),  // vsock: guest connections to <uds>_<port>
    RULE(connect, M | L),
    RULE(shutdown, M | L),
    RULE(getsockopt, M | L),
    RULE(setsockopt, M | L),
    RULE(getsockname, M | L),
    RULE(getpeername, M | L),
    RULE(timerfd_create, M | L),
    RULE(timerfd_settime, M | L | V),  // rate limiters re-armed when a notify finds no budget
    RULE(timerfd_gettime, M | L | V),
    RULE(poll, M | L | C),
    RULE(ppoll, M | L | C),

    // virtio-fs threads: the file server's host calls (vmm/devices/fs/host_fs.h). Every name is
    // one component beneath a directory fd of the share (openat2 RESOLVE_BENEATH, or an *at
    // call that does not follow the last component); openat only reopens an fd of ours through
    // /proc/self/fd, as readlinkat, linkat, utimensat and fchmodat do. No path-taking call
    // without *at, nothing that executes, mounts or makes sockets. Found by running every op
    // under this filter (tests/unit/devices/fs/fs_seccomp_test.cpp).
    RULE(openat2, M | F),
    RULE(openat, M | F),
    RULE(readlinkat, M | F),
    RULE(getdents64, M | F),
    RULE(mkdirat, M | F),
    RULE(mknodat, M | F),  // regular files only: MKNOD of anything else is EPERM before it
    RULE(symlinkat, M | F),
    RULE(linkat, M | F),
    RULE(unlinkat, M | F),
    RULE(renameat2, M | F),
    RULE(renameat, M | F),  // glibc's renameat2() makes this call when the flags are 0
    RULE(utimensat, M | F),
    RULE(fchmodat, M | F),
    RULE(ftruncate, M | F),
    RULE(fstatfs, M | F),
    RULE(copy_file_range, M | F),

    // Main thread only: building VMs, files, the control API, snapshots, deferred teardown.
    RULE(ioctl, M),
    RULE(socket, M),
    RULE(open, M),
    RULE(statx, M),
    RULE(access, M),
    RULE(faccessat, M),
    RULE(faccessat2, M),
    RULE(readlink, M),
    RULE(mkdir, M),
    RULE(unlink, M),
    RULE(rename, M),
    RULE(statfs, M),
    RULE(flock, M),
    RULE(memfd_create, M),
    RULE(bind, M),
    RULE(listen, M),
    RULE(socketpair, M),
    RULE(pipe2, M),
    RULE(dup, M),
    RULE(dup2, M),
    RULE(dup3, M),
    RULE(epoll_create1, M),
    RULE(clone, M),  // threads (older glibc) and the teardown child
    RULE(clone3, M),
    RULE(set_robust_list, M),
    RULE(rseq, M),
    RULE(wait4, M),
    RULE(waitid, M),
    RULE(kill, M),
    RULE(prctl, M),
    RULE(seccomp, M),  // threads started later install their own filter
    RULE(prlimit64, M),
    RULE(sched_getaffinity, M),
    RULE(sigaltstack, M),
    RULE(uname, M),
    RULE(sysinfo, M),
    RULE(getuid, M),
    RULE(geteuid, M),
    RULE(getgid, M),
    RULE(getegid, M),
    RULE(setsid, M),
    RULE(getppid, M),
    RULE(mincore, M),
    RULE(umask, M),
    RULE(chmod, M),  // the control API socket is made 0600
    RULE(fchmod, M),
};

#undef RULE
#undef RULE_IF

}  // namespace

const char* thread_role_name(ThreadRole role) {
  switch (role) {
    case ThreadRole::kMain:
      return "main";
    case ThreadRole::kEventLoop:
      return "event-loop";
    case ThreadRole::kVcpu:
      return "vcpu";
    case ThreadRole::kConsole:
      return "console";
    case ThreadRole::kFs:
      return "fs";
  }
  return "?";
}

std::span<const SyscallRule> seccomp_rules() {
  return kRules;
}

}  // namespace carapace
