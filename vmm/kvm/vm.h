// Vm: one KVM virtual machine: memory slots, the in-kernel irqchip (PIC, IOAPIC, LAPICs) and PIT,
// interrupt lines, irqfds and ioeventfds.
#pragma once

#include <cstdint>
#include <optional>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "vmm/kvm/kvm.h"
#include "vmm/memory/guest_memory.h"

namespace carapace {

class Vm {
 public:
  static Result<Vm> create(const Kvm& kvm);

  int fd() const { return fd_.get(); }

  // Registers every region of `mem` as a memory slot. Call before create_irqchip(): registering
  // slots after the in-kernel irqchip exists is ~50x slower on some hosts (HOST-NOTES).
  Status register_memory(const GuestMemory& mem);
  Status set_memory_slot(uint32_t slot, GuestAddress gpa, uint64_t size, const void* host,
                         uint32_t flags = 0);

  // The TSS and identity-map pages KVM needs on Intel hosts, placed in the MMIO hole below the
  // IOAPIC where no RAM or device lives.
  Status set_tss_and_identity_map();
  Status create_irqchip();
  Status create_pit();
  // Raises (level=true) or lowers an interrupt line on the PIC/IOAPIC.
  Status set_irq_line(uint32_t irq, bool level);
  Status register_irqfd(int event_fd, uint32_t gsi);
  // A guest write of `len` bytes at `addr` (equal to `datamatch`, when given) signals `event_fd`
  // inside the kernel, without an exit to user space.
  Status register_ioeventfd(int event_fd, uint64_t addr, uint32_t len, bool mmio,
                            std::optional<uint64_t> datamatch = std::nullopt);

 private:
  explicit Vm(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace carapace
