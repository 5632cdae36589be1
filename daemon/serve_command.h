// `carapace serve`: the sandbox daemon (docs/api.md). Argument parsing is pure and unit tested;
// cmd_serve() loads the config, picks the back ends and runs the daemon until SIGTERM/SIGINT.
#pragma once

#include <string>
#include <vector>

#include "common/base/result.h"

namespace carapace {

struct ServeArgs {
  std::string socket_path;
  std::string state_dir;
  std::string config_path;  // "" = defaults
  bool help = false;
};

Result<ServeArgs> parse_serve_args(const std::vector<std::string>& args);

int cmd_serve(const std::vector<std::string>& args);

extern const char kServeUsage[];

}  // namespace carapace
