#include "jailer/jail_command.h"

#include <unistd.h>

#include <cstdio>

#include "jailer/jail.h"
#include "jailer/jail_config.h"

namespace carapace {

int cmd_jail(const std::vector<std::string>& args) {
  // Nothing the caller left open may reach the jail (or hold the supervisor's resources).
  ::close_range(3, ~0U, 0);
  auto cfg = parse_jail_args(args);
  if (!cfg.ok()) {
    fprintf(stderr, "carapace jail: error: %s\n", cfg.error().describe().c_str());
    return 2;
  }
  if (cfg->help) {
    fputs(kJailUsage, stdout);
    return 0;
  }
  if (::geteuid() != 0) {
    fprintf(stderr, "carapace jail: error: must run as root (it creates namespaces and cgroups)\n");
    return 1;
  }
  return run_jail(*cfg);
}

}  // namespace carapace
