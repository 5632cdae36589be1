// The process exit statuses every `carapace` command shares: 0 done, 1 a host-side failure, 2 bad
// command-line input; `carapace run` adds one per way a VM can end (vmm/machine/exit_status.h).
#pragma once

namespace carapace {

// Process exit statuses of `carapace run`. 2 is reserved for bad command-line input.
enum ExitCode : int {
  kExitOk = 0,
  kExitHostError = 1,
  kExitUsage = 2,
  kExitTripleFault = 3,
  kExitKvmError = 4,
  kExitTimeout = 5,
  kExitGuestPanic = 6,
};

}  // namespace carapace
