// VcpuState: everything KVM holds for one vCPU that a snapshot must carry, as plain data.
// capture() reads it from a paused vCPU; apply() writes it into a freshly created one in the
// order KVM needs (CPUID first, special registers before the LAPIC and MSRs, events last).
#pragma once

#include <vector>

#include "common/base/result.h"
#include "vmm/kvm/kvm.h"
#include "vmm/kvm/kvm_uapi.h"
#include "vmm/kvm/vcpu.h"

namespace carapace {

struct VcpuState {
  CpuidTable cpuid;
  kvm_mp_state mp_state{};
  kvm_regs regs{};
  kvm_sregs sregs{};
  kvm_xsave xsave{};  // x87/SSE/AVX state; a superset of kvm_fpu
  kvm_xcrs xcrs{};
  kvm_debugregs debugregs{};
  kvm_lapic_state lapic{};
  std::vector<MsrValue> msrs;  // TSC and kvmclock MSRs included
  kvm_vcpu_events events{};
};

// MSRs worth saving: KVM's index list, minus those this host refuses to read back on `probe`.
// Computed once per VM (the list is the same for every vCPU).
Result<std::vector<uint32_t>> saveable_msrs(const Kvm& kvm, const Vcpu& probe);

// `cpuid` is what the VMM set on this vCPU (KVM cannot be asked reliably on every host).
Result<VcpuState> capture_vcpu_state(const Vcpu& vcpu, const CpuidTable& cpuid,
                                     const std::vector<uint32_t>& msr_indices);
Status apply_vcpu_state(Vcpu& vcpu, const VcpuState& state);

}  // namespace carapace
