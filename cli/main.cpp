// carapace: the one executable of every program in the tree. Each command is its program's own
// (the monitor's `run`/`restore`/`fork`/`snapshot` in vmm/cli, `jail` in jailer/, `run
// --isolation process` in process_sandbox/, `serve` in daemon/, `sandbox`/`mcp`/`agent` in
// clients/, `egress-proxy` in egress/); this file only dispatches.
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "carapace/version.h"
#include "clients/agent/agent_command.h"
#include "clients/cpp/sandbox_command.h"
#include "clients/mcp/mcp_command.h"
#include "daemon/serve_command.h"
#include "egress/egress_proxy_command.h"
#include "jailer/jail_command.h"
#include "process_sandbox/process_run_args.h"
#include "process_sandbox/process_run_command.h"
#include "vmm/cli/fork_command.h"
#include "vmm/cli/restore_command.h"
#include "vmm/cli/run_command.h"
#include "vmm/cli/snapshot_command.h"
#include "vmm/machine/exit_status.h"

namespace {

constexpr char kUsage[] =
    "carapace: a KVM microVM monitor for disposable agent sandboxes\n"
    "usage: carapace <command> [options]\n"
    "commands:\n"
    "  run       boot a kernel in a new microVM (carapace run --help)\n"
    "  restore   run one or more clones of a snapshot (carapace restore --help)\n"
    "  snapshot  inspect a snapshot directory (carapace snapshot --help)\n"
    "  fork      fork a running VM into children (carapace fork --help)\n"
    "  agent     send a request to a sandbox's guest agent (carapace agent --help)\n"
    "  jail      run carapace jailed: namespaces, cgroups, no privileges (carapace jail --help)\n"
    "  sandbox   use the sandbox daemon: templates, sandboxes, exec, files (carapace sandbox "
    "--help)\n"
    "  mcp       an MCP server on stdio for one sandbox (carapace mcp --help)\n"
    "  serve     the sandbox daemon: REST API on a Unix socket (carapace serve --help)\n"
    "  egress-proxy  one sandbox's egress proxy: allowlisted CONNECT and HTTP on a Unix socket\n"
    "            (carapace egress-proxy --help)\n"
    "  version   print the version\n"
    "  --help    this text\n";

int cmd_run(std::vector<std::string> args) {
  using namespace carapace;
  // --isolation process: the agent in a jail, no VM (process_sandbox/process_sandbox.h).
  auto isolation = take_isolation_flag(args);
  if (!isolation.ok()) return fail_usage(isolation.error().describe());
  if (*isolation == RunIsolation::kProcess) return cmd_run_process(args);
  return cmd_run_vm(args);
}

int dispatch(const std::string& cmd, const std::vector<std::string>& rest) {
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    fputs(kUsage, stdout);
    return 0;
  }
  if (cmd == "version" || cmd == "--version") {
    printf("carapace %s\n", carapace::kVersion);
    return 0;
  }
  if (cmd == "run") return cmd_run(rest);
  if (cmd == "agent") return carapace::cmd_agent(rest);
  if (cmd == "jail") return carapace::cmd_jail(rest);
  if (cmd == "restore") return carapace::cmd_restore(rest);
  if (cmd == "fork") return carapace::cmd_fork(rest);
  if (cmd == "snapshot") return carapace::cmd_snapshot(rest);
  if (cmd == "sandbox") return carapace::cmd_sandbox(rest);
  if (cmd == "mcp") return carapace::cmd_mcp(rest);
  if (cmd == "serve") return carapace::cmd_serve(rest);
  if (cmd == "egress-proxy") return carapace::cmd_egress_proxy(rest);
  return carapace::fail_usage("unknown command '" + cmd + "' (see carapace --help)");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fputs(kUsage, stderr);
    return carapace::kExitUsage;
  }
  std::vector<std::string> rest(argv + 2, argv + argc);
  // A write past RLIMIT_FSIZE (the jail sets it) is EFBIG, an error value like any other, not a
  // signal that ends the process: a guest filling a workspace share must not kill its VMM.
  // Ignored dispositions survive exec, so the programs the jail runs keep this.
  ::signal(SIGXFSZ, SIG_IGN);
  // Errors are values on every path; this is the last line of defence for an exception that
  // still escapes (std::bad_alloc, a library's throw): one line and status 1, never a core dump
  // from std::terminate.
  try {
    return dispatch(argv[1], rest);
  } catch (const std::exception& e) {
    fprintf(stderr, "carapace: error: unexpected failure: %s\n", e.what());
  } catch (...) {
    fprintf(stderr, "carapace: error: unexpected failure\n");
  }
  return carapace::kExitHostError;
}
