// How a VM ended, and the process exit status `carapace run` maps it to. Each outcome has its own
// status so a caller (test, pool, daemon) can tell a clean guest reset from a crash or a hang.
#pragma once

#include <cstddef>
#include <iterator>

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

// What each outcome is outside the VMM: one row per outcome, in the enum's order.
struct VmOutcomeInfo {
  VmOutcome outcome;
  int exit_code;     // the process exit status of `carapace run` / `restore`
  const char* name;  // for messages ("VM ended: triple fault: ...")
};
inline constexpr VmOutcomeInfo kVmOutcomes[] = {
    {VmOutcome::kGuestReset, kExitOk, "guest reset"},
    {VmOutcome::kHostError, kExitHostError, "host error"},
    {VmOutcome::kTripleFault, kExitTripleFault, "triple fault"},
    {VmOutcome::kKvmError, kExitKvmError, "KVM error"},
    {VmOutcome::kTimeout, kExitTimeout, "timeout"},
    {VmOutcome::kGuestPanic, kExitGuestPanic, "guest panic"},
};

// Row i is outcome i, so a new outcome without its row fails to build.
constexpr bool vm_outcome_rows_in_order() {
  for (size_t i = 0; i < std::size(kVmOutcomes); ++i)
    if (static_cast<size_t>(kVmOutcomes[i].outcome) != i) return false;
  return std::size(kVmOutcomes) == static_cast<size_t>(VmOutcome::kGuestPanic) + 1;
}
static_assert(vm_outcome_rows_in_order());

// nullptr for a value outside the enum.
inline const VmOutcomeInfo* vm_outcome_info(VmOutcome o) {
  const auto i = static_cast<size_t>(o);
  return i < std::size(kVmOutcomes) ? &kVmOutcomes[i] : nullptr;
}

inline int exit_code_for(VmOutcome o) {
  const VmOutcomeInfo* info = vm_outcome_info(o);
  return info ? info->exit_code : kExitHostError;
}

inline const char* outcome_name(VmOutcome o) {
  const VmOutcomeInfo* info = vm_outcome_info(o);
  return info ? info->name : "?";
}

}  // namespace carapace
