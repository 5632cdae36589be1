// `carapace run --isolation process` (process_run_args.h, process_sandbox/process_sandbox.h).
#pragma once

#include <string>
#include <vector>

namespace carapace {

// `args`: the run flags with `--isolation process` taken out.
int cmd_run_process(const std::vector<std::string>& args);

}  // namespace carapace
