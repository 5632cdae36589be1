#include "vmm/kvm/vm.h"

#include <sys/ioctl.h>

namespace carapace {

namespace {
// Three pages just below the IOAPIC, unused by anything else in the layout.
constexpr uint64_t kTssAddr = 0xfeffd000;
constexpr uint64_t kIdentityMapAddr = 0xfeffc000;
}  // namespace

Result<Vm> Vm::create(const Kvm& kvm) {
  int fd;
  do {
    // KVM_CREATE_VM can fail with EINTR when a signal arrives during creation.
    fd = ::ioctl(kvm.fd(), KVM_CREATE_VM, 0);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return sys_error("KVM_CREATE_VM");
  return Vm(UniqueFd(fd));
}

Status Vm::set_memory_slot(uint32_t slot, GuestAddress gpa, uint64_t size, const void* host,
                           uint32_t flags) {
  kvm_userspace_memory_region r{};
  r.slot = slot;
  r.flags = flags;
  r.guest_phys_addr = gpa.value;
  r.memory_size = size;
  r.userspace_addr = reinterpret_cast<uint64_t>(host);
  if (::ioctl(fd_.get(), KVM_SET_USER_MEMORY_REGION, &r) < 0)
    return sys_error("KVM_SET_USER_MEMORY_REGION slot " + std::to_string(slot));
  return {};
}

Status Vm::register_memory(const GuestMemory& mem) {
  uint32_t slot = 0;
  for (const auto& r : mem.regions())
    TRY_STATUS(set_memory_slot(slot++, r.start, r.size, r.host_base()));
  return {};
}

Status Vm::set_tss_and_identity_map() {
  if (::ioctl(fd_.get(), KVM_SET_TSS_ADDR, kTssAddr) < 0) return sys_error("KVM_SET_TSS_ADDR");
  uint64_t ident = kIdentityMapAddr;
  if (::ioctl(fd_.get(), KVM_SET_IDENTITY_MAP_ADDR, &ident) < 0)
    return sys_error("KVM_SET_IDENTITY_MAP_ADDR");
  return {};
}

Status Vm::create_irqchip() {
  if (::ioctl(fd_.get(), KVM_CREATE_IRQCHIP, 0) < 0) return sys_error("KVM_CREATE_IRQCHIP");
  return {};
}

Status Vm::create_pit() {
  kvm_pit_config pit{};
  // The speaker port (0x61) is handled in the kernel as a dummy, so no exits for it.
  pit.flags = KVM_PIT_SPEAKER_DUMMY;
  if (::ioctl(fd_.get(), KVM_CREATE_PIT2, &pit) < 0) return sys_error("KVM_CREATE_PIT2");
  return {};
}

Status Vm::set_irq_line(uint32_t irq, bool level) {
  kvm_irq_level l{};
  l.irq = irq;
  l.level = level ? 1 : 0;
  if (::ioctl(fd_.get(), KVM_IRQ_LINE, &l) < 0) return sys_error("KVM_IRQ_LINE");
  return {};
}

Status Vm::register_irqfd(int event_fd, uint32_t gsi) {
  kvm_irqfd f{};
  f.fd = static_cast<uint32_t>(event_fd);
  f.gsi = gsi;
  if (::ioctl(fd_.get(), KVM_IRQFD, &f) < 0) return sys_error("KVM_IRQFD");
  return {};
}

Status Vm::register_ioeventfd(int event_fd, uint64_t addr, uint32_t len, bool mmio,
                              std::optional<uint64_t> datamatch) {
  kvm_ioeventfd e{};
  e.addr = addr;
  e.len = len;
  e.fd = event_fd;
  e.flags = mmio ? 0 : KVM_IOEVENTFD_FLAG_PIO;
  if (datamatch) {
    e.flags |= KVM_IOEVENTFD_FLAG_DATAMATCH;
    e.datamatch = *datamatch;
  }
  if (::ioctl(fd_.get(), KVM_IOEVENTFD, &e) < 0) return sys_error("KVM_IOEVENTFD");
  return {};
}

}  // namespace carapace
