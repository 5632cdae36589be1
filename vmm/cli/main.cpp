// carapace: the command-line entry point. `run` boots one VM and exits with a status that says
// how it ended (see kRunUsage).
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "vmm/api/control/vm_api.h"
#include "vmm/base/log.h"
#include "vmm/cli/agent_command.h"
#include "vmm/cli/fork_command.h"
#include "vmm/cli/jail_command.h"
#include "vmm/cli/machine_control.h"
#include "vmm/cli/mcp_command.h"
#include "vmm/cli/process_run_args.h"
#include "vmm/cli/process_run_command.h"
#include "vmm/cli/restore_command.h"
#include "vmm/cli/run_args.h"
#include "vmm/cli/sandbox_command.h"
#include "vmm/cli/serve_command.h"
#include "vmm/cli/snapshot_command.h"
#include "vmm/machine/deferred_teardown.h"
#include "vmm/machine/exit_status.h"
#include "vmm/machine/machine.h"
#include "vmm/security/seccomp.h"

namespace {

constexpr char kVersion[] = "0.1.0";

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
    "  version   print the version\n"
    "  --help    this text\n";

int fail_usage(const std::string& msg) {
  fprintf(stderr, "carapace: error: %s\n", msg.c_str());
  return carapace::kExitUsage;
}

int cmd_run(std::vector<std::string> args) {
  using namespace carapace;
  // --isolation process: the agent in a jail, no VM (vmm/jail/process_sandbox.h).
  auto isolation = take_isolation_flag(args);
  if (!isolation.ok()) return fail_usage(isolation.error().describe());
  if (*isolation == RunIsolation::kProcess) return cmd_run_process(args);
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      fputs(kRunUsage, stdout);
      return kExitOk;
    }
  }
  auto parsed = parse_run_args(args);
  if (!parsed.ok()) return fail_usage(parsed.error().describe());
  set_log_level(static_cast<LogLevel>(parsed->log_level));
  if (parsed->seccomp) {
    if (Status s = enable_seccomp(); !s.ok()) {
      fprintf(stderr, "carapace: error: %s\n", s.error().describe().c_str());
      return kExitHostError;
    }
  }

  auto machine = Machine::build(parsed->machine);
  if (!machine.ok()) {
    const Error& e = machine.error();
    fprintf(stderr, "carapace: error: %s\n", e.describe().c_str());
    return e.kind == ErrorKind::kInvalidInput ? kExitUsage : kExitHostError;
  }
  // The API is up before the VM starts, so a bad --api-sock fails before anything has run.
  MachineControl control(**machine);
  std::unique_ptr<VmApi> api;
  if (!parsed->api_sock.empty()) {
    auto started = VmApi::start(parsed->api_sock, control);
    if (!started.ok()) {
      fprintf(stderr, "carapace: error: --api-sock: %s\n", started.error().describe().c_str());
      return kExitHostError;
    }
    api = std::move(*started);
  }
  // The main thread's filter goes on before the vCPUs start (they inherit it, then add their own).
  if (Status s = apply_seccomp(ThreadRole::kMain); !s.ok()) {
    fprintf(stderr, "carapace: error: %s\n", s.error().describe().c_str());
    return kExitHostError;
  }
  (*machine)->start();
  VmOutcome outcome = (*machine)->wait();
  // The socket goes with the VM: nothing is left to control.
  if (api) api->stop();
  // Forked children run on after their parent; the VMM ends when the last of them does.
  control.wait_children();
  if (outcome != VmOutcome::kGuestReset) {
    fprintf(stderr, "carapace: VM ended: %s: %s\n", outcome_name(outcome),
            (*machine)->outcome_detail().c_str());
  } else {
    LOG_INFO("VM ended: %s", (*machine)->outcome_detail().c_str());
  }
  if (uint64_t dropped = (*machine)->console_dropped())
    LOG_WARN("console: %llu bytes dropped", static_cast<unsigned long long>(dropped));
  if (parsed->deferred_teardown) {
    fflush(nullptr);
    hand_off_kvm_teardown();
  }
  return exit_code_for(outcome);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fputs(kUsage, stderr);
    return carapace::kExitUsage;
  }
  std::string cmd = argv[1];
  std::vector<std::string> rest(argv + 2, argv + argc);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    fputs(kUsage, stdout);
    return 0;
  }
  if (cmd == "version" || cmd == "--version") {
    printf("carapace %s\n", kVersion);
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
  return fail_usage("unknown command '" + cmd + "' (see carapace --help)");
}
