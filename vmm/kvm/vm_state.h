// VmState: the VM-wide state KVM holds: the two PICs, the IOAPIC, the PIT and the kvmclock.
#pragma once

#include "common/base/result.h"
#include "vmm/kvm/kvm_uapi.h"
#include "vmm/kvm/vm.h"

namespace carapace {

struct VmState {
  kvm_irqchip pic_master{};
  kvm_irqchip pic_slave{};
  kvm_irqchip ioapic{};
  kvm_pit_state2 pit{};
  kvm_clock_data clock{};
};

Result<VmState> capture_vm_state(const Vm& vm);
// Call after the irqchip and PIT exist and before any vCPU runs.
Status apply_vm_state(Vm& vm, const VmState& state);

}  // namespace carapace
