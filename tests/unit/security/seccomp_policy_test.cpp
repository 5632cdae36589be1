// The seccomp allowlists (vmm/security/seccomp_policy.cpp), checked as data (docs/security.md #32):
// what no VMM thread may ever do, what the guest-facing threads must not do, and what every thread
// needs to work and to report a violation.
#include "vmm/security/seccomp_policy.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>

#include <set>
#include <string>

namespace carapace {
namespace {

bool allowed(ThreadRole role, long nr) {
  for (const SyscallRule& r : seccomp_rules())
    if (r.nr == nr && (r.roles & (1u << static_cast<int>(role)))) return true;
  return false;
}

constexpr ThreadRole kRoles[] = {ThreadRole::kMain, ThreadRole::kEventLoop, ThreadRole::kVcpu,
                                 ThreadRole::kConsole, ThreadRole::kFs};
static_assert(sizeof kRoles / sizeof kRoles[0] == kThreadRoles);

TEST(SeccompPolicy, NoThreadMayTouchTheAttackSurface) {
  const long forbidden[] = {SYS_execve,
                            SYS_execveat,
                            SYS_ptrace,
                            SYS_process_vm_readv,
                            SYS_process_vm_writev,
                            SYS_mount,
                            SYS_umount2,
                            SYS_pivot_root,
                            SYS_chroot,
                            SYS_kexec_load,
                            SYS_init_module,
                            SYS_finit_module,
                            SYS_delete_module,
                            SYS_bpf,
                            SYS_perf_event_open,
                            SYS_keyctl,
                            SYS_add_key,
                            SYS_request_key,
                            SYS_userfaultfd,
                            SYS_personality,
                            SYS_setuid,
                            SYS_setgid,
                            SYS_unshare,
                            SYS_setns,
                            SYS_reboot,
                            SYS_swapon,
                            SYS_iopl,
                            SYS_ioperm};
  for (ThreadRole role : kRoles)
    for (long nr : forbidden)
      EXPECT_FALSE(allowed(role, nr)) << thread_role_name(role) << " allows syscall " << nr;
}

TEST(SeccompPolicy, GuestFacingThreadsCannotOpenFilesOrSpawn) {
  const long forbidden[] = {SYS_open,  SYS_openat, SYS_clone,        SYS_clone3,   SYS_fork,
                            SYS_vfork, SYS_kill,   SYS_unlink,       SYS_unlinkat, SYS_rename,
                            SYS_bind,  SYS_listen, SYS_memfd_create, SYS_prctl,    SYS_seccomp};
  for (ThreadRole role : {ThreadRole::kVcpu, ThreadRole::kEventLoop, ThreadRole::kConsole})
    for (long nr : forbidden)
      EXPECT_FALSE(allowed(role, nr)) << thread_role_name(role) << " allows syscall " << nr;
}

// docs/security.md #60: a virtio-fs thread makes the file server's calls and nothing that
// spawns, signals other processes, makes sockets, mounts, or reaches a device (ioctl); its names
// go through *at calls and openat2 (path-taking calls without a directory fd are not listed).
// The shared event loop gains none of the file calls.
TEST(SeccompPolicy, SecurityCheck60_TheFsRoleHasFileCallsAndNothingElse) {
  const long forbidden[] = {
      SYS_clone,  SYS_clone3,   SYS_fork,    SYS_vfork,        SYS_kill,    SYS_socket,  SYS_bind,
      SYS_listen, SYS_connect,  SYS_accept4, SYS_ioctl,        SYS_prctl,   SYS_seccomp, SYS_open,
      SYS_unlink, SYS_rename,   SYS_mkdir,   SYS_symlink,      SYS_link,    SYS_chmod,   SYS_chown,
      SYS_fchown, SYS_fchownat, SYS_mknod,   SYS_memfd_create, SYS_sendmsg, SYS_execve};
  for (long nr : forbidden)
    EXPECT_FALSE(allowed(ThreadRole::kFs, nr)) << "fs allows syscall " << nr;
  const long needed[] = {SYS_openat2,    SYS_openat,    SYS_readlinkat, SYS_getdents64,
                         SYS_mkdirat,    SYS_mknodat,   SYS_symlinkat,  SYS_linkat,
                         SYS_unlinkat,   SYS_renameat2, SYS_utimensat,  SYS_fchmodat,
                         SYS_preadv,     SYS_pwritev,   SYS_ftruncate,  SYS_fallocate,
                         SYS_fsync,      SYS_fdatasync, SYS_fstatfs,    SYS_copy_file_range,
                         SYS_epoll_wait, SYS_read,      SYS_write,      SYS_close};
  for (long nr : needed)
    EXPECT_TRUE(allowed(ThreadRole::kFs, nr)) << "fs lacks syscall " << nr;
  const long file_calls[] = {SYS_openat2,        SYS_readlinkat, SYS_getdents64, SYS_mkdirat,
                             SYS_mknodat,        SYS_symlinkat,  SYS_linkat,     SYS_renameat2,
                             SYS_utimensat,      SYS_fchmodat,   SYS_ftruncate,  SYS_fstatfs,
                             SYS_copy_file_range};
  for (ThreadRole role : {ThreadRole::kEventLoop, ThreadRole::kVcpu, ThreadRole::kConsole})
    for (long nr : file_calls)
      EXPECT_FALSE(allowed(role, nr)) << thread_role_name(role) << " allows syscall " << nr;
}

TEST(SeccompPolicy, ArgumentChecksNarrowIoctlAndSocket) {
  for (const SyscallRule& r : seccomp_rules()) {
    const bool vcpu = r.roles & (1u << static_cast<int>(ThreadRole::kVcpu));
    const bool loop = r.roles & (1u << static_cast<int>(ThreadRole::kEventLoop));
    if (r.nr == SYS_ioctl && vcpu) {
      EXPECT_EQ(r.check, ArgCheck::kKvmIoctl);
    }
    if (r.nr == SYS_socket && loop) {
      EXPECT_EQ(r.check, ArgCheck::kUnixSocket);
    }
  }
  EXPECT_FALSE(allowed(ThreadRole::kConsole, SYS_ioctl));
  EXPECT_FALSE(allowed(ThreadRole::kConsole, SYS_socket));
}

TEST(SeccompPolicy, EveryThreadCanWorkAndReportAViolation) {
  const long needed[] = {SYS_write,  SYS_futex,  SYS_exit,   SYS_rt_sigreturn, SYS_rt_sigaction,
                         SYS_tgkill, SYS_gettid, SYS_getpid, SYS_mmap,         SYS_munmap};
  for (ThreadRole role : kRoles)
    for (long nr : needed)
      EXPECT_TRUE(allowed(role, nr)) << thread_role_name(role) << " lacks syscall " << nr;
}

// Filters stack: threads the main thread starts after installing its filter keep it, so the main
// filter must allow everything the other roles allow (with the same argument checks or none).
TEST(SeccompPolicy, MainAllowsWhatEveryOtherRoleAllows) {
  for (const SyscallRule& r : seccomp_rules())
    EXPECT_TRUE(allowed(ThreadRole::kMain, r.nr)) << "main lacks " << r.name;
}

TEST(SeccompPolicy, NoRuleIsListedTwiceForARole) {
  for (ThreadRole role : kRoles) {
    std::set<long> seen;
    for (const SyscallRule& r : seccomp_rules())
      if (r.roles & (1u << static_cast<int>(role))) {
        EXPECT_TRUE(seen.insert(r.nr).second) << thread_role_name(role) << ": " << r.name;
      }
  }
}

}  // namespace
}  // namespace carapace
