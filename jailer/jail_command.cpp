#include "jailer/jail_command.h"

#include <unistd.h>

#include "jailer/jail.h"
#include "jailer/jail_attach.h"
#include "jailer/jail_config.h"
#include "jailer/supervisor.h"

namespace carapace {

int cmd_jail(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "attach") {
    // Only the descriptor the caller handed over for the folder stays open.
    auto cfg = parse_attach_args({args.begin() + 1, args.end()});
    if (cfg.ok() && cfg->source_fd > 3) ::close_range(3, cfg->source_fd - 1, 0);
    if (cfg.ok()) ::close_range(cfg->source_fd + 1, ~0U, 0);
    return cmd_jail_attach({args.begin() + 1, args.end()});
  }
  // Nothing the caller left open may reach the jail (or hold the supervisor's resources).
  ::close_range(3, ~0U, 0);
  auto cfg = parse_jail_args(args);
  if (auto status =
          supervisor_command_ends({"carapace jail: error", kJailUsage,
                                   "must run as root (it creates namespaces and cgroups)"},
                                  cfg))
    return *status;
  return run_jail(*cfg);
}

}  // namespace carapace
