#include "vmm/security/seccomp_compile.h"

#include <seccomp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "common/base/unique_fd.h"

namespace carapace {

Result<std::vector<sock_filter>> compile_seccomp_filter(ThreadRole role, bool sanitizer_runtime) {
  // Sanitizer runtimes make calls of their own in any thread, and LeakSanitizer's exit-time
  // tracer (a clone of the main thread, under its filter) needs more still; in those builds an
  // unlisted call is logged by the kernel instead of trapped. Release builds trap.
  scmp_filter_ctx ctx = seccomp_init(sanitizer_runtime ? SCMP_ACT_LOG : SCMP_ACT_TRAP);
  if (ctx == nullptr) return make_error("seccomp_init failed");
  struct Release {
    scmp_filter_ctx c;
    ~Release() { seccomp_release(c); }
  } release{ctx};
  // A binary tree of syscall numbers instead of one comparison after another: every system call
  // of the thread walks O(log n) instructions, and so does the kernel when it installs the filter
  // (it runs the filter once per syscall number to find the always-allowed ones, the action
  // cache of Documentation/userspace-api/seccomp_filter.rst).
  if (int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2); rc != 0)
    return make_error(std::string("seccomp: binary tree optimisation: ") + strerror(-rc));
  const uint8_t bit = static_cast<uint8_t>(1u << static_cast<int>(role));
  for (const SyscallRule& r : seccomp_rules()) {
    if ((r.roles & bit) == 0) continue;
    int rc = 0;
    switch (r.check) {
      case ArgCheck::kNone:
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, static_cast<int>(r.nr), 0);
        break;
      case ArgCheck::kKvmIoctl:
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, static_cast<int>(r.nr), 1,
                              scmp_arg_cmp{1, SCMP_CMP_MASKED_EQ, 0xff00, 0xae00});
        break;
      case ArgCheck::kUnixSocket:
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, static_cast<int>(r.nr), 1,
                              scmp_arg_cmp{0, SCMP_CMP_EQ, AF_UNIX, 0});
        break;
    }
    if (rc != 0)
      return make_error(std::string("seccomp: cannot add ") + r.name + " to the " +
                        thread_role_name(role) + " filter: " + strerror(-rc));
  }
  if (sanitizer_runtime) {
    // The probe of the seccomp tests still traps, so they see each role's filter act.
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(personality), 0); rc != 0)
      return make_error(std::string("seccomp: sanitizer probe rule: ") + strerror(-rc));
  }
  // The BPF program, through a memfd (libseccomp 2.5 exports only to an fd).
  UniqueFd fd(memfd_create("carapace-seccomp", MFD_CLOEXEC));
  if (!fd.valid()) return sys_error("memfd_create for the seccomp filter");
  if (int rc = seccomp_export_bpf(ctx, fd.get()); rc != 0)
    return make_error(std::string("seccomp_export_bpf: ") + strerror(-rc));
  const off_t size = lseek(fd.get(), 0, SEEK_END);
  if (size <= 0 || size % sizeof(sock_filter) != 0) return make_error("seccomp: bad BPF export");
  std::vector<sock_filter> prog(static_cast<size_t>(size) / sizeof(sock_filter));
  if (pread(fd.get(), prog.data(), static_cast<size_t>(size), 0) != size)
    return sys_error("reading the seccomp filter back");
  return prog;
}

}  // namespace carapace
