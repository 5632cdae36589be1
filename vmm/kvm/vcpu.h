// Vcpu: one KVM virtual CPU and its shared kvm_run page.
#pragma once

#include "vmm/kvm/kvm_uapi.h"

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/base/mmap_region.h"
#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "vmm/kvm/kvm.h"
#include "vmm/kvm/vm.h"

namespace carapace {

struct MsrValue {
  uint32_t index;
  uint64_t value;
};

class Vcpu {
 public:
  static Result<Vcpu> create(const Kvm& kvm, const Vm& vm, uint32_t index);

  uint32_t index() const { return index_; }
  int fd() const { return fd_.get(); }
  kvm_run* run_state() const { return reinterpret_cast<kvm_run*>(run_.data()); }

  // KVM_RUN once. EINTR (a kick from another thread) is reported as success with
  // exit_reason KVM_EXIT_INTR so the caller's loop can check why it was woken.
  Status run();

  Result<kvm_regs> get_regs() const;
  Status set_regs(const kvm_regs& regs);
  Result<kvm_sregs> get_sregs() const;
  Status set_sregs(const kvm_sregs& sregs);
  Result<kvm_fpu> get_fpu() const;
  Status set_fpu(const kvm_fpu& fpu);
  Status set_cpuid(const CpuidTable& cpuid);
  Status set_msrs(std::span<const MsrValue> msrs);
  Result<std::vector<MsrValue>> get_msrs(std::span<const uint32_t> indices) const;
  Result<kvm_lapic_state> get_lapic() const;
  Status set_lapic(const kvm_lapic_state& lapic);
  Result<kvm_mp_state> get_mp_state() const;
  Status set_mp_state(const kvm_mp_state& state);
  Result<kvm_xsave> get_xsave() const;
  Status set_xsave(const kvm_xsave& xsave);
  Result<kvm_xcrs> get_xcrs() const;
  Status set_xcrs(const kvm_xcrs& xcrs);
  Result<kvm_vcpu_events> get_vcpu_events() const;
  Status set_vcpu_events(const kvm_vcpu_events& events);
  Result<kvm_debugregs> get_debugregs() const;
  Status set_debugregs(const kvm_debugregs& regs);
  // Tells KVM the guest was paused on purpose, so its soft-lockup watchdog does not fire after a
  // resume (KVM_KVMCLOCK_CTRL). Harmless when the guest does not use kvmclock.
  Status notify_paused();

  // Multi-line dump of general and segment registers for crash reports.
  std::string describe_registers() const;

 private:
  Vcpu(UniqueFd fd, MmapRegion run, uint32_t index)
      : fd_(std::move(fd)), run_(std::move(run)), index_(index) {}

  UniqueFd fd_;
  MmapRegion run_;
  uint32_t index_;
};

}  // namespace carapace
