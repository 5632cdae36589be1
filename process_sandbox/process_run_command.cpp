#include "process_sandbox/process_run_command.h"

#include <unistd.h>

#include <string>

#include "jailer/supervisor.h"
#include "process_sandbox/process_run_args.h"
#include "process_sandbox/process_sandbox.h"

namespace carapace {

int cmd_run_process(const std::vector<std::string>& args) {
  // Nothing the caller left open may reach the sandbox (or hold the supervisor's resources).
  ::close_range(3, ~0U, 0);
  auto parsed = parse_process_run_args(args);
  if (auto status = supervisor_command_ends(
          {"carapace: error", kProcessRunUsage,
           "--isolation process must run as root (loop mount, namespaces, cgroups)"},
          parsed))
    return *status;
  ProcessSandboxConfig cfg = parsed->cfg;
  if (cfg.id.empty()) cfg.id = "sandbox-" + std::to_string(::getpid());
  return run_process_sandbox(cfg);
}

}  // namespace carapace
