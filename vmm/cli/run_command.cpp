// `carapace run`: boot one VM from flags, serve its control API if asked, wait for it to end and
// exit with a status that says how it ended (kRunUsage in run_args.h).
#include "vmm/cli/run_command.h"

#include <cstdio>
#include <memory>

#include "common/base/log.h"
#include "vmm/cli/process_limits.h"
#include "vmm/cli/run_args.h"
#include "vmm/control/machine_control.h"
#include "vmm/control/vm_api.h"
#include "vmm/machine/deferred_teardown.h"
#include "vmm/machine/exit_status.h"
#include "vmm/machine/machine.h"
#include "vmm/security/seccomp.h"

namespace carapace {

int fail_usage(const std::string& msg) {
  fprintf(stderr, "carapace: error: %s\n", msg.c_str());
  return kExitUsage;
}

int cmd_run_vm(const std::vector<std::string>& args) {
  if (print_help_if_asked(args, kRunUsage)) return kExitOk;
  auto parsed = parse_run_args(args);
  if (!parsed.ok()) return fail_usage(parsed.error().describe());
  set_log_level(static_cast<LogLevel>(parsed->log_level));
  raise_open_file_limit_for_shares(parsed->machine.devices.filesystems.size());
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

}  // namespace carapace
