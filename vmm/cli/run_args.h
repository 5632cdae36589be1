// Parsing of `carapace run` flags into a MachineConfig. Pure (no I/O), so every bad input is unit
// tested: each refusal is one line naming the flag and why.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/base/flag_values.h"
#include "common/base/result.h"
#include "vmm/machine/machine_config.h"

namespace carapace {

struct RunArgs {
  MachineConfig machine;
  int log_level = 1;              // 0 error, 1 warn, 2 info, 3 debug
  bool deferred_teardown = true;  // see vmm/machine/deferred_teardown.h
  std::string api_sock;           // --api-sock: serve the control API here ("" = none)
  bool seccomp = true;            // per-thread seccomp filters (--no-seccomp turns them off)
};

Result<RunArgs> parse_run_args(const std::vector<std::string>& args);

// The value after the flag being parsed, taken from the arguments when asked for: a flag that
// takes none (--hugepages) never asks.
using FlagValue = std::function<Result<std::string>()>;
// Walks `args` one flag at a time, for `run` and `restore`; a missing value is refused as
// "FLAG: missing value". Stops at the first error `on_flag` returns.
Status for_each_flag(
    const std::vector<std::string>& args,
    const std::function<Status(const std::string& flag, const FlagValue& value)>& on_flag);

// --help or -h anywhere: prints `usage` on stdout and returns true; the command does nothing
// else, whatever the other flags are (valid or not).
bool print_help_if_asked(const std::vector<std::string>& args, const char* usage);

// Flags `run` shares with `restore`.
Status parse_console_arg(const std::string& value, ConsoleConfig& console);  // --console
Result<int> parse_log_level(const std::string& value);                       // --log-level
Result<bool> parse_teardown(const std::string& value);  // --teardown: true = deferred

extern const char kRunUsage[];

}  // namespace carapace
