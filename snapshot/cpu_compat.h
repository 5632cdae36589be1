// Whether a snapshot's vCPUs can run on this host. A guest that saw a CPU feature keeps using
// it after restore; if the host cannot provide it the guest faults (or silently computes wrong)
// long after the restore "succeeded". So a restore is refused up front, with a message that
// says why and what to do, when:
//   - the CPU vendor differs (different MSRs, SYSCALL/SYSENTER rules, microcode interfaces);
//   - the snapshot used the `host` template and the CPU family or model differs (the guest saw
//     everything that CPU had; a portable snapshot needs `--cpu-template baseline`);
//   - any vCPU's CPUID advertises a feature bit (leaves 1, 7.0, 0x80000001) that this host's
//     KVM does not support, whatever the template.
#pragma once

#include "common/base/result.h"
#include "snapshot/cpu_signature.h"
#include "vmm/kvm/kvm.h"
#include "vmm/machine/machine_state.h"

namespace carapace {

// Pure, so every rule is unit tested; errors are ErrorKind::kInvalidInput.
Status check_snapshot_cpu(const CpuSignature& snapshot_cpu, const MachineState& state,
                          const CpuSignature& host_cpu, const CpuidTable& host_supported);

}  // namespace carapace
