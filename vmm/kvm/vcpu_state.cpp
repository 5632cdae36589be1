#include "vmm/kvm/vcpu_state.h"

#include <algorithm>

namespace carapace {

namespace {
// Read-only or write-once MSRs that KVM lists but refuses, or that must not be written back
// (e.g. IA32_TSC_ADJUST follows IA32_TSC; writing both double-counts). Firecracker keeps a
// similar deny list.
constexpr uint32_t kSkippedMsrs[] = {
    0x3b,  // IA32_TSC_ADJUST
};
}  // namespace

Result<std::vector<uint32_t>> saveable_msrs(const Kvm& kvm, const Vcpu& probe) {
  auto all = TRY(kvm.msr_index_list());
  std::vector<uint32_t> out;
  out.reserve(all.size());
  for (uint32_t index : all) {
    if (std::find(std::begin(kSkippedMsrs), std::end(kSkippedMsrs), index) !=
        std::end(kSkippedMsrs))
      continue;
    // KVM_GET_MSRS reads entries in order and stops at the first it refuses.
    auto got = probe.get_msrs(std::span<const uint32_t>(&index, 1));
    if (got.ok() && got->size() == 1) out.push_back(index);
  }
  return out;
}

Result<VcpuState> capture_vcpu_state(const Vcpu& vcpu, const CpuidTable& cpuid,
                                     const std::vector<uint32_t>& msr_indices) {
  VcpuState s;
  s.cpuid = cpuid;
  s.mp_state = TRY(vcpu.get_mp_state());
  s.regs = TRY(vcpu.get_regs());
  s.sregs = TRY(vcpu.get_sregs());
  s.xsave = TRY(vcpu.get_xsave());
  s.xcrs = TRY(vcpu.get_xcrs());
  s.debugregs = TRY(vcpu.get_debugregs());
  s.lapic = TRY(vcpu.get_lapic());
  s.msrs = TRY(vcpu.get_msrs(msr_indices));
  if (s.msrs.size() != msr_indices.size())
    return make_error("vCPU " + std::to_string(vcpu.index()) + ": KVM_GET_MSRS read " +
                      std::to_string(s.msrs.size()) + " of " + std::to_string(msr_indices.size()) +
                      " MSRs");
  s.events = TRY(vcpu.get_vcpu_events());
  return s;
}

Status apply_vcpu_state(Vcpu& vcpu, const VcpuState& s) {
  TRY_STATUS(vcpu.set_cpuid(s.cpuid));
  TRY_STATUS(vcpu.set_mp_state(s.mp_state));
  TRY_STATUS(vcpu.set_regs(s.regs));
  TRY_STATUS(vcpu.set_sregs(s.sregs));
  TRY_STATUS(vcpu.set_xsave(s.xsave));
  TRY_STATUS(vcpu.set_xcrs(s.xcrs));
  TRY_STATUS(vcpu.set_debugregs(s.debugregs));
  // The LAPIC after SREGS (which carry APIC_BASE) and before the MSRs (TSC deadline lives there).
  TRY_STATUS(vcpu.set_lapic(s.lapic));
  TRY_STATUS(vcpu.set_msrs(s.msrs));
  kvm_vcpu_events events = s.events;
  // Restore NMI/SIPI/SMM state and pending exceptions as captured.
  events.flags |= KVM_VCPUEVENT_VALID_NMI_PENDING | KVM_VCPUEVENT_VALID_SIPI_VECTOR;
  return vcpu.set_vcpu_events(events);
}

}  // namespace carapace
