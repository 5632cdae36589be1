#include "process_sandbox/process_run_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "common/base/exit_code.h"
#include "jailer/supervisor.h"
#include "process_sandbox/process_run_args.h"
#include "process_sandbox/process_sandbox.h"
#include "process_sandbox/share_mounts.h"

namespace carapace {
namespace {

// Every descriptor from 3 up but those in `keep`.
void close_all_but(std::vector<int> keep) {
  std::sort(keep.begin(), keep.end());
  unsigned from = 3;
  for (int fd : keep) {
    if (fd < 3) continue;
    if (static_cast<unsigned>(fd) > from) ::close_range(from, static_cast<unsigned>(fd) - 1, 0);
    from = static_cast<unsigned>(fd) + 1;
  }
  ::close_range(from, ~0U, 0);
}

}  // namespace

int cmd_run_process(const std::vector<std::string>& args) {
  auto parsed = parse_process_run_args(args);
  if (auto status = supervisor_command_ends(
          {"carapace: error", kProcessRunUsage,
           "--isolation process must run as root (loop mount, namespaces, cgroups)"},
          parsed)) {
    ::close_range(3, ~0U, 0);
    return *status;
  }
  ProcessSandboxConfig cfg = parsed->cfg;
  if (cfg.id.empty()) cfg.id = "sandbox-" + std::to_string(::getpid());
  // The share folders are opened first: the daemon names the ones it checked as
  // /proc/self/fd/N of descriptors it passed, which the next step closes.
  std::vector<UniqueFd> dirs;
  std::vector<int> keep;
  for (const ShareSpec& s : cfg.shares) {
    auto dir = open_share_dir(s);
    if (!dir.ok()) {
      ::close_range(3, ~0U, 0);
      fprintf(stderr, "carapace run --isolation process: error: %s\n",
              dir.error().describe().c_str());
      return kExitUsage;
    }
    keep.push_back(dir->get());
    dirs.push_back(std::move(*dir));
  }
  // Nothing else the caller left open may reach the sandbox (or hold the supervisor's resources).
  close_all_but(keep);
  return run_process_sandbox(cfg, std::move(dirs));
}

}  // namespace carapace
