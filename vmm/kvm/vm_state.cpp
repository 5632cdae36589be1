#include "vmm/kvm/vm_state.h"

#include <sys/ioctl.h>

namespace carapace {

namespace {

Result<kvm_irqchip> get_chip(int vm_fd, uint32_t id) {
  kvm_irqchip chip{};
  chip.chip_id = id;
  if (::ioctl(vm_fd, KVM_GET_IRQCHIP, &chip) < 0)
    return sys_error("KVM_GET_IRQCHIP " + std::to_string(id));
  return chip;
}

Status set_chip(int vm_fd, const kvm_irqchip& chip) {
  if (::ioctl(vm_fd, KVM_SET_IRQCHIP, &chip) < 0)
    return sys_error("KVM_SET_IRQCHIP " + std::to_string(chip.chip_id));
  return {};
}

}  // namespace

Result<VmState> capture_vm_state(const Vm& vm) {
  VmState s;
  s.pic_master = TRY(get_chip(vm.fd(), KVM_IRQCHIP_PIC_MASTER));
  s.pic_slave = TRY(get_chip(vm.fd(), KVM_IRQCHIP_PIC_SLAVE));
  s.ioapic = TRY(get_chip(vm.fd(), KVM_IRQCHIP_IOAPIC));
  if (::ioctl(vm.fd(), KVM_GET_PIT2, &s.pit) < 0) return sys_error("KVM_GET_PIT2");
  if (::ioctl(vm.fd(), KVM_GET_CLOCK, &s.clock) < 0) return sys_error("KVM_GET_CLOCK");
  return s;
}

Status apply_vm_state(Vm& vm, const VmState& s) {
  TRY_STATUS(set_chip(vm.fd(), s.pic_master));
  TRY_STATUS(set_chip(vm.fd(), s.pic_slave));
  TRY_STATUS(set_chip(vm.fd(), s.ioapic));
  if (::ioctl(vm.fd(), KVM_SET_PIT2, &s.pit) < 0) return sys_error("KVM_SET_PIT2");
  // Only the clock value itself: the other fields describe the source host's TSC.
  kvm_clock_data clock{};
  clock.clock = s.clock.clock;
  if (::ioctl(vm.fd(), KVM_SET_CLOCK, &clock) < 0) return sys_error("KVM_SET_CLOCK");
  return {};
}

}  // namespace carapace
