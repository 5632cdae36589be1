#include "egress/proxy_confinement.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netdb.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <vector>

// Sanitizer builds (ASan/UBSan, fuzzing): their runtimes make calls of their own in any thread,
// LeakSanitizer's exit-time tracer among them, so there an unlisted call is logged
// (SECCOMP_RET_LOG) instead of trapped, as the VMM's filters do (vmm/security/README.md).
#if defined(__SANITIZE_ADDRESS__)
#define CARAPACE_EGRESS_SANITIZER_RUNTIME 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CARAPACE_EGRESS_SANITIZER_RUNTIME 1
#endif
#endif

namespace carapace::egress {
namespace {

#ifdef CARAPACE_EGRESS_SANITIZER_RUNTIME
constexpr uint32_t kUnlisted = SECCOMP_RET_LOG;
#else
constexpr uint32_t kUnlisted = SECCOMP_RET_TRAP;
#endif

// Serving connections (accept, poll, read/write, shutdown), the worker threads (clone3, futex,
// mmap for stacks), the control socket's HTTP server, the resolver (reads of /etc files, UDP/TCP
// to the name servers, netlink for AI_ADDRCONFIG), the dialler (connect with a timeout), the
// stop signal (rt_sigtimedwait), the socketpairs of terminated TLS connections and exit. socket and
// openat are checked apart (below).
constexpr long kAllowed[] = {
    SYS_read,
    SYS_write,
    SYS_readv,
    SYS_writev,
    SYS_pread64,
    SYS_close,
    SYS_lseek,
    SYS_fstat,
    SYS_newfstatat,
    SYS_statx,
    SYS_poll,
    SYS_ppoll,
    SYS_pselect6,
    SYS_epoll_create1,
    SYS_epoll_ctl,
    SYS_epoll_wait,
    SYS_epoll_pwait,
    SYS_accept,
    SYS_accept4,
    SYS_connect,
    SYS_sendto,
    SYS_recvfrom,
    SYS_sendmsg,
    SYS_recvmsg,
    SYS_sendmmsg,
    SYS_recvmmsg,
    SYS_setsockopt,
    SYS_getsockopt,
    SYS_getsockname,
    SYS_getpeername,
    SYS_shutdown,
    SYS_bind,
    SYS_fcntl,
    SYS_dup,
    SYS_dup3,
    SYS_pipe2,
    // The two pairs a terminated TLS connection bridges its plaintext over
    // (proxy/terminated_session.cpp): connected to each other only, no new way out.
    SYS_socketpair,
    SYS_eventfd2,
    SYS_mmap,
    SYS_munmap,
    SYS_mprotect,
    SYS_madvise,
    SYS_brk,
    SYS_mremap,
    SYS_futex,
    SYS_clone,
    SYS_clone3,
    SYS_set_robust_list,
    SYS_rseq,
    SYS_rt_sigprocmask,
    SYS_rt_sigaction,
    SYS_rt_sigreturn,
    SYS_rt_sigtimedwait,
    SYS_sigaltstack,
    SYS_sched_yield,
    SYS_sched_getaffinity,
    SYS_nanosleep,
    SYS_clock_nanosleep,
    SYS_clock_gettime,
    SYS_gettimeofday,
    SYS_gettid,
    SYS_getpid,
    SYS_getppid,
    SYS_getuid,
    SYS_geteuid,
    SYS_getgid,
    SYS_getegid,
    SYS_tgkill,
    SYS_exit,
    SYS_exit_group,
    SYS_uname,
    SYS_getrandom,
    SYS_prlimit64,
    SYS_restart_syscall,
    SYS_unlink,
    SYS_access,
    SYS_faccessat,
    SYS_faccessat2,
    SYS_ioctl,
};

// The families the resolver and the dialler open; anything else is EAFNOSUPPORT.
constexpr int kSocketFamilies[] = {AF_INET, AF_INET6, AF_UNIX, AF_NETLINK};

// Any of these in openat's flags is refused with EACCES: the proxy writes no file.
constexpr unsigned kOpenWriteFlags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;

constexpr unsigned kNrOffset = offsetof(seccomp_data, nr);
constexpr unsigned kArchOffset = offsetof(seccomp_data, arch);
// The low 32 bits of an argument (x86-64 is little-endian).
constexpr unsigned arg_offset(int i) {
  return static_cast<unsigned>(offsetof(seccomp_data, args) + 8 * static_cast<size_t>(i));
}

sock_filter stmt(uint16_t code, uint32_t k) {
  return BPF_STMT(code, k);
}
sock_filter jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
  return BPF_JUMP(code, k, jt, jf);
}

std::vector<sock_filter> build_filter() {
  std::vector<sock_filter> f;
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kArchOffset));
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kNrOffset));
  // The x32 ABI shares the architecture value: its numbers have bit 30 set.
  f.push_back(jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));

  // socket(family, ...): the families above.
  constexpr uint8_t kFamilies = sizeof kSocketFamilies / sizeof kSocketFamilies[0];
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, kFamilies + 3));
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, arg_offset(0)));
  for (uint8_t i = 0; i < kFamilies; ++i)
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(kSocketFamilies[i]),
                     static_cast<uint8_t>(kFamilies - i), 0));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAFNOSUPPORT));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));

  // openat(dirfd, path, flags, ...): reading only.
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 4));
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, arg_offset(2)));
  f.push_back(jump(BPF_JMP | BPF_JSET | BPF_K, kOpenWriteFlags, 0, 1));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));

  for (long nr : kAllowed) {
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1));
    f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  }
  f.push_back(stmt(BPF_RET | BPF_K, kUnlisted));
  return f;
}

// Async-signal-safe: the call's number, then death by SIGSYS with the default action.
void report_sigsys(int, siginfo_t* info, void*) {
  char line[96] = "carapace egress-proxy: seccomp: forbidden system call ";
  size_t n = sizeof "carapace egress-proxy: seccomp: forbidden system call " - 1;
  char digits[20];
  size_t d = 0;
  auto v = static_cast<unsigned long>(info->si_syscall);
  do {
    digits[d++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0 && d < sizeof digits);
  while (d > 0 && n < sizeof line - 1)
    line[n++] = digits[--d];
  line[n++] = '\n';
  (void)!::write(STDERR_FILENO, line, n);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGSYS, &dfl, nullptr);
  ::raise(SIGSYS);
}

// The resolver's first lookup loads the NSS modules nsswitch.conf names (dlopen: opening and
// mapping libraries); done here, before the filter and with the files still readable.
void warm_up_resolver() {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo("localhost", "80", &hints, &res) == 0) ::freeaddrinfo(res);
}

}  // namespace

Status confine_proxy(uid_t uid, gid_t gid) {
  warm_up_resolver();
  if (::setgroups(0, nullptr) != 0) return sys_error("setgroups");
  // glibc's wrappers change the ids of every thread (its setxid broadcast): the threads the
  // proxy and its control server already started drop too.
  if (::setresgid(gid, gid, gid) != 0) return sys_error("setresgid");
  if (::setresuid(uid, uid, uid) != 0) return sys_error("setresuid");
  if (uid != 0 && ::setuid(0) == 0) return make_error("root could be regained after the drop");
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return sys_error("PR_SET_DUMPABLE");
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return sys_error("PR_SET_NO_NEW_PRIVS");
  struct sigaction sa {};
  sa.sa_sigaction = report_sigsys;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (::sigaction(SIGSYS, &sa, nullptr) != 0) return sys_error("sigaction SIGSYS");
  std::vector<sock_filter> code = build_filter();
  sock_fprog prog{static_cast<unsigned short>(code.size()), code.data()};
  long r = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
  if (r < 0) return sys_error("seccomp");
  // TSYNC answers with a thread's id when that thread could not be synchronised.
  if (r > 0) return make_error("seccomp: thread " + std::to_string(r) + " kept its filter");
  return ok_status();
}

}  // namespace carapace::egress
