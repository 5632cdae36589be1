// The process back end's workload filter (process_sandbox/workload_seccomp.h): the table as data,
// then the real filter installed in a forked child (no_new_privs is enough; no root needed).
#include "process_sandbox/workload_seccomp.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>

namespace carapace {
namespace {

TEST(WorkloadSeccompTest, TableDeniesTheAttackSurface) {
  std::set<std::string> names;
  for (const WorkloadRule& r : workload_seccomp_rules()) {
    EXPECT_TRUE(names.insert(r.name).second) << "listed twice: " << r.name;
    EXPECT_TRUE(r.error == EPERM || r.error == ENOSYS) << r.name;
    EXPECT_NE(std::string(r.why), "") << r.name;
  }
  for (const char* must : {"ptrace",
                           "process_vm_readv",
                           "process_vm_writev",
                           "mount",
                           "umount2",
                           "pivot_root",
                           "move_mount",
                           "open_tree",
                           "fsopen",
                           "fsmount",
                           "fsconfig",
                           "fspick",
                           "kexec_load",
                           "kexec_file_load",
                           "bpf",
                           "init_module",
                           "finit_module",
                           "delete_module",
                           "keyctl",
                           "add_key",
                           "request_key",
                           "userfaultfd",
                           "io_uring_setup",
                           "io_uring_enter",
                           "io_uring_register",
                           "perf_event_open",
                           "unshare",
                           "setns",
                           "clone",
                           "clone3",
                           "swapon",
                           "swapoff",
                           "reboot",
                           "settimeofday",
                           "clock_settime",
                           "adjtimex",
                           "acct",
                           "quotactl",
                           "lookup_dcookie",
                           "open_by_handle_at",
                           "name_to_handle_at",
                           "personality",
                           "syslog",
                           "vhangup",
                           "iopl",
                           "ioperm",
                           "modify_ldt",
                           "chroot"})
    EXPECT_TRUE(names.count(must)) << "not denied: " << must;
  // Everyday calls stay allowed.
  for (const char* allowed : {"read", "write", "openat", "execve", "fork", "vfork", "wait4",
                              "socket", "connect", "mmap", "prctl"})
    EXPECT_FALSE(names.count(allowed)) << allowed;
}

TEST(WorkloadSeccompTest, ProgramFitsTheKernelLimit) {
  auto prog = build_workload_seccomp_filter();
  EXPECT_GT(prog.size(), workload_seccomp_rules().size());
  EXPECT_LE(prog.size(), 4096u);  // BPF_MAXINSNS
}

// Each check runs in a forked child under the filter; the child's exit code says which failed.
int run_filtered(int (*body)()) {
  pid_t pid = fork();
  if (pid == 0) {
    if (!install_workload_seccomp().ok()) _exit(100);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

int denied(long r, int err) {
  return r == -1 && errno == err ? 0 : 1;
}

TEST(WorkloadSeccompTest, DeniedCallsFailWithEperm) {
  EXPECT_EQ(run_filtered([] { return denied(ptrace(PTRACE_TRACEME, 0, nullptr, nullptr), EPERM); }),
            0);
  EXPECT_EQ(run_filtered([] { return denied(mount("none", "/tmp", "tmpfs", 0, nullptr), EPERM); }),
            0);
  EXPECT_EQ(run_filtered([] { return denied(syscall(SYS_bpf, 0, nullptr, 0), EPERM); }), 0);
  EXPECT_EQ(run_filtered([] { return denied(syscall(SYS_io_uring_setup, 1, nullptr), EPERM); }), 0);
  EXPECT_EQ(run_filtered([] { return denied(syscall(SYS_keyctl, 0, 0, 0, 0, 0), EPERM); }), 0);
  EXPECT_EQ(run_filtered([] { return denied(syscall(SYS_userfaultfd, 0), EPERM); }), 0);
  EXPECT_EQ(run_filtered([] { return denied(unshare(CLONE_NEWUSER), EPERM); }), 0);
  EXPECT_EQ(run_filtered([] { return denied(unshare(CLONE_NEWNET), EPERM); }), 0);
  EXPECT_EQ(run_filtered([] { return denied(syscall(SYS_clone3, nullptr, 0), ENOSYS); }), 0);
  EXPECT_EQ(run_filtered([] { return denied(personality(ADDR_NO_RANDOMIZE), EPERM); }), 0);
  // x32 syscall numbers do not sidestep the table.
  EXPECT_EQ(run_filtered([] { return denied(syscall(0x40000000 | SYS_getpid), EPERM); }), 0);
}

TEST(WorkloadSeccompTest, EverydayCallsStillWork) {
  EXPECT_EQ(run_filtered([] {
              if (personality(0xffffffff) == -1) return 1;
              if (unshare(CLONE_FILES) != 0) return 2;  // no namespace flag: allowed
              pid_t p = fork();                         // glibc: clone without CLONE_NEW*
              if (p < 0) return 3;
              if (p == 0) _exit(7);
              int st = 0;
              if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 7) return 4;
              return getpid() > 0 ? 0 : 5;
            }),
            0);
}

}  // namespace
}  // namespace carapace
