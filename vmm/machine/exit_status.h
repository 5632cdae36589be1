// How a VM ended, and the process exit status `carapace run` maps it to. Each outcome has its own
// status so a caller (test, pool, daemon) can tell a clean guest reset from a crash or a hang.
#pragma once

#include "common/base/exit_code.h"

namespace carapace {

enum class VmOutcome {
  kGuestReset,   // the guest reset or powered off: a normal end
  kHostError,    // the VMM itself failed while running
  kTripleFault,  // KVM_EXIT_SHUTDOWN
  kKvmError,     // internal error, emulation failure, failed entry, unexpected exit
  kTimeout,      // --timeout expired
  kGuestPanic,   // the guest reported a panic
};

inline int exit_code_for(VmOutcome o) {
  switch (o) {
    case VmOutcome::kGuestReset:
      return kExitOk;
    case VmOutcome::kHostError:
      return kExitHostError;
    case VmOutcome::kTripleFault:
      return kExitTripleFault;
    case VmOutcome::kKvmError:
      return kExitKvmError;
    case VmOutcome::kTimeout:
      return kExitTimeout;
    case VmOutcome::kGuestPanic:
      return kExitGuestPanic;
  }
  return kExitHostError;
}

inline const char* outcome_name(VmOutcome o) {
  switch (o) {
    case VmOutcome::kGuestReset:
      return "guest reset";
    case VmOutcome::kHostError:
      return "host error";
    case VmOutcome::kTripleFault:
      return "triple fault";
    case VmOutcome::kKvmError:
      return "KVM error";
    case VmOutcome::kTimeout:
      return "timeout";
    case VmOutcome::kGuestPanic:
      return "guest panic";
  }
  return "?";
}

}  // namespace carapace
