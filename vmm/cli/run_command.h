// `carapace run` of a microVM (the `--isolation process` form is process_sandbox/'s).
#pragma once

#include <string>
#include <vector>

namespace carapace {

// `args`: the flags after `run`, without `--isolation`.
int cmd_run_vm(const std::vector<std::string>& args);

}  // namespace carapace
