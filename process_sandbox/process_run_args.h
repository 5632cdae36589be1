// `carapace run --isolation process`: its flags, parsed into a ProcessSandboxConfig (pure; unit
// tested in tests/unit/cli/process_run_args_test.cpp). The sandbox itself is jailer/
// process_sandbox.h.
#pragma once

#include <string>
#include <vector>

#include "common/base/result.h"
#include "process_sandbox/process_sandbox.h"

namespace carapace {

enum class RunIsolation { kMicrovm, kProcess };

// Finds `--isolation X` in `args` and removes it (the value too). Invalid input for an unknown
// value or a missing one; kMicrovm when absent.
Result<RunIsolation> take_isolation_flag(std::vector<std::string>& args);

struct ProcessRunArgs {
  ProcessSandboxConfig cfg;  // id "" when not given: the caller picks one
  bool help = false;
};

// The flags after `--isolation process` was taken out.
Result<ProcessRunArgs> parse_process_run_args(const std::vector<std::string>& args);

extern const char kProcessRunUsage[];

}  // namespace carapace
