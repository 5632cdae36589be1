#include "vmm/security/seccomp.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace carapace {

namespace {

struct SeccompProgram {
  const sock_filter* code;
  size_t length;
};

// kSeccompPrograms[role]: compiled at build time by carapace_seccomp_gen (seccomp_gen.cpp).
#include "vmm/security/seccomp_filters.inc"

constexpr size_t kRoles = sizeof kSeccompPrograms / sizeof kSeccompPrograms[0];
static_assert(kRoles == kThreadRoles, "one program per ThreadRole");

std::atomic<bool> enabled{false};
int probe_role = -1;  // CARAPACE_SECCOMP_PROBE, read by enable_seccomp()
std::atomic<bool> probe_fired{false};
// The last filter this thread installed, for the report (threads inherit their creator's filter,
// so a thread that installed none reports "inherited").
thread_local const char* current_role = nullptr;

// Async-signal-safe decimal.
size_t format_u64(char* out, uint64_t v) {
  char tmp[20];
  size_t n = 0;
  do {
    tmp[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v);
  for (size_t i = 0; i < n; ++i)
    out[i] = tmp[n - 1 - i];
  return n;
}

const char* syscall_name(long nr) {
  for (const SyscallRule& r : seccomp_rules())
    if (r.nr == nr) return r.name;
  return nullptr;
}

// SIGSYS from a SECCOMP_RET_TRAP: one line on stderr, then die by SIGSYS with the default action.
void report_sigsys(int, siginfo_t* info, void*) {
  char line[160];
  size_t n = 0;
  auto put = [&](const char* s) {
    while (*s && n < sizeof line - 1)
      line[n++] = *s++;
  };
  put("carapace: seccomp: forbidden system call ");
  n += format_u64(line + n, static_cast<uint64_t>(info->si_syscall));
  if (const char* name = syscall_name(info->si_syscall)) {
    put(" (");
    put(name);
    put(", not allowed for this thread)");
  }
  put(" in thread ");
  n += format_u64(line + n, static_cast<uint64_t>(syscall(SYS_gettid)));
  put(" (");
  put(current_role != nullptr ? current_role : "inherited");
  put(" filter)");
  line[n++] = '\n';
  (void)!write(STDERR_FILENO, line, n);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGSYS, &dfl, nullptr);
  syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGSYS);
}

}  // namespace

Status enable_seccomp() {
  if (enabled.load()) return {};
  if (const char* probe = getenv("CARAPACE_SECCOMP_PROBE")) {
    for (size_t i = 0; i < kRoles; ++i)
      if (strcmp(probe, thread_role_name(static_cast<ThreadRole>(i))) == 0)
        probe_role = static_cast<int>(i);
  }
  struct sigaction sa {};
  sa.sa_sigaction = report_sigsys;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSYS, &sa, nullptr) != 0) return sys_error("sigaction(SIGSYS)");
  enabled.store(true);
  return {};
}

bool seccomp_enabled() {
  return enabled.load();
}

Status apply_seccomp(ThreadRole role) {
  if (!enabled.load()) return {};
  const SeccompProgram& p = kSeccompPrograms[static_cast<size_t>(role)];
  sock_fprog prog{static_cast<unsigned short>(p.length), const_cast<sock_filter*>(p.code)};
  // A thread's first malloc sets up its cache and picks an arena, and glibc may then read
  // /sys/devices/system/cpu/online to size the arena limit: an openat the filtered thread may not
  // make. So malloc once first (through a volatile pointer: a plain malloc/free pair is elided).
  void* volatile first = malloc(64);
  free(first);
  // Without CAP_SYS_ADMIN a filter needs no_new_privs; the VMM never gains privileges anyway.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return sys_error("prctl(PR_SET_NO_NEW_PRIVS)");
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
    return sys_error(std::string("installing the ") + thread_role_name(role) + " seccomp filter");
  current_role = thread_role_name(role);
  seccomp_probe_point(role);
  return {};
}

void seccomp_probe_point(ThreadRole role) {
  if (probe_role != static_cast<int>(role)) return;
  if (probe_fired.exchange(true)) return;
  // personality(2) is on no list: the filter must stop it.
  syscall(SYS_personality, 0xffffffffUL);
}

}  // namespace carapace
