// `carapace run` of a microVM (the `--isolation process` form is process_sandbox/'s).
#pragma once

#include <string>
#include <vector>

namespace carapace {

// A refused command line, for `carapace` and `carapace run`: "carapace: error: MSG" on stderr;
// returns kExitUsage.
int fail_usage(const std::string& msg);

// `args`: the flags after `run`, without `--isolation`.
int cmd_run_vm(const std::vector<std::string>& args);

}  // namespace carapace
