// carapace-agent: the guest agent. As the guest's PID 1 it sets up the root file system
// (early_boot.h), then serves the protocol in PROTOCOL.md on AF_VSOCK port 52. Started any other
// way (host tests) it only serves, on vsock or on a Unix socket (--listen unix:PATH).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "guest/agent/agent_context.h"
#include "guest/agent/console.h"
#include "guest/agent/early_boot.h"
#include "guest/agent/options.h"
#include "guest/agent/selftest.h"
#include "guest/agent/server.h"
#include "guest/agent/system_ops.h"

namespace carapace::agent {
namespace {

constexpr char kTokenFile[] = "/etc/carapace/token";

std::string read_small_file(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str().substr(0, 4096);
}

// PID 1 must never exit (the kernel would panic): a fatal error is reported and the VM reset.
[[noreturn]] void fatal(bool pid1, const Error& e) {
  console_line("fatal: %s", e.describe().c_str());
  if (pid1) power_off();
  _exit(1);
}

// The token from the kernel command line, else from the image's token file. The file is then
// removed (a whiteout in the overlay) so programs in the sandbox cannot read it.
std::string boot_token(const KernelCmdline& cmdline) {
  if (!cmdline.token.empty()) return cmdline.token;
  std::string t = read_small_file(kTokenFile);
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ' || t.back() == '\r'))
    t.pop_back();
  if (t.empty()) return t;
  ::unlink(kTokenFile);
  if (valid_token(t)) return t;
  console_line("%s is not 1..%zu hex digits; ignored", kTokenFile, kMaxTokenChars);
  return {};
}

// --token-fd: the token is read from the descriptor to its end (the sender closes its side),
// and the descriptor closed. The process is then made non-dumpable, so a sandboxed process of
// the same uid cannot read the token out of /proc/<agent>/mem (children that exec are dumpable
// again, as usual).
Status read_token_fd(AgentOptions* opts) {
  std::string t;
  char buf[256];
  for (;;) {
    ssize_t n = ::read(opts->token_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("--token-fd: read");
    if (n == 0) break;
    t.append(buf, static_cast<size_t>(n));
    if (t.size() > kMaxTokenChars + 2) return make_error("--token-fd: token too long");
  }
  ::close(opts->token_fd);
  opts->token_fd = -1;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' '))
    t.pop_back();
  if (!valid_token(t))
    return make_error("--token-fd: expected 1.." + std::to_string(kMaxTokenChars) + " hex digits");
  opts->token = std::move(t);
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return sys_error("PR_SET_DUMPABLE");
  return ok_status();
}

// --listen fd:N: must be a listening stream socket.
Result<UniqueFd> inherited_listener(int fd) {
  int listening = 0;
  socklen_t len = sizeof listening;
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening)
    return make_error("--listen fd:" + std::to_string(fd) + " is not a listening socket");
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // exec'd commands must not inherit it
  return UniqueFd(fd);
}

int run(AgentOptions opts, bool pid1, const std::string& selftest) {
  auto root = SandboxRoot::open(opts.root);
  if (!root.ok()) fatal(pid1, root.error());
  // Mounts made before the agent started; one outside the root is out of file requests' reach
  // anyway (exec still sees it).
  for (const std::string& point : opts.mount_points)
    if (root->relative(point).ok()) {
      Status s = root->add_mount(point);
      if (!s.ok()) fatal(pid1, s.error());
    }
  auto children = ChildRegistry::start();
  if (!children.ok()) fatal(pid1, children.error());
  AgentContext ctx(opts, pid1, std::move(*root), std::move(*children));
  ctx.token.set(opts.token);
  if (opts.token.empty()) console_line("no token configured: only ping is answered");

  auto listener = opts.listen == AgentOptions::Listen::kUnix ? listen_unix(opts.unix_path)
                  : opts.listen == AgentOptions::Listen::kFd ? inherited_listener(opts.listen_fd)
                                                             : listen_vsock(opts.vsock_port);
  if (!listener.ok()) fatal(pid1, listener.error());
  if (opts.listen == AgentOptions::Listen::kFd)
    console_line("listening on fd %d, root %s", opts.listen_fd, ctx.root.path().c_str());
  else if (opts.listen == AgentOptions::Listen::kUnix)
    console_line("listening on unix:%s, root %s", opts.unix_path.c_str(), ctx.root.path().c_str());
  else
    console_line("listening on vsock port %u, root %s", opts.vsock_port, ctx.root.path().c_str());
  console_line("ready");
  if (!selftest.empty()) start_selftest(ctx, selftest);
  Status s = serve_forever(ctx, listener->get());
  fatal(pid1, s.error());
}

}  // namespace
}  // namespace carapace::agent

namespace {

int agent_main(int argc, char** argv) {
  using namespace carapace::agent;
  const bool pid1 = ::getpid() == 1;
  // Before any thread exists: the reaper takes SIGCHLD with sigtimedwait (child_registry.h),
  // and a closed peer is an error from send(), not a signal.
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &chld, nullptr);
  signal(SIGPIPE, SIG_IGN);
  umask(022);

  std::vector<std::string> args(argv + 1, argv + argc);
  if (pid1) {
    // The kernel hands init any command-line words it does not know; they are not our flags.
    if (auto s = early_boot(); !s.ok()) fatal(true, s.error());
    KernelCmdline cmdline = parse_kernel_cmdline(read_small_file("/proc/cmdline"));
    for (const auto& p : cmdline.problems)
      console_line("%s", p.c_str());
    AgentOptions opts;
    opts.token = boot_token(cmdline);
    return run(opts, true, cmdline.selftest);
  }

  auto opts = parse_agent_args(args);
  if (!opts.ok()) {
    fprintf(stderr, "carapace-agent: error: %s\n%s", opts.error().describe().c_str(), kAgentUsage);
    return 2;
  }
  if (opts->help) {
    fputs(kAgentUsage, stdout);
    return 0;
  }
  if (opts->token_fd >= 0) {
    if (carapace::Status s = read_token_fd(&*opts); !s.ok()) {
      fprintf(stderr, "carapace-agent: error: %s\n", s.error().describe().c_str());
      return 2;
    }
  }
  ensure_std_fds();
  // Orphans of exec'd processes come to the agent, whose reaper collects them, as under PID 1.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  return run(*opts, false, "");
}

}  // namespace

int main(int argc, char** argv) {
  // Errors are values on every path; an exception that still escapes (std::bad_alloc, a
  // library's throw) is one line and status 1, or, as PID 1, the VM's power-off: never
  // std::terminate's core dump, which as PID 1 would panic the guest's kernel.
  std::string what = "unknown exception";
  try {
    return agent_main(argc, argv);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  carapace::agent::fatal(::getpid() == 1, carapace::make_error("unexpected failure: " + what));
}
