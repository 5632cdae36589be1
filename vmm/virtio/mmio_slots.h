// Where virtio-mmio devices live: one 4 KiB window each, from layout::kVirtioMmioBase upward, and
// one interrupt each, from IRQ 5 upward (IRQ 4 is COM1) to 23, the last IOAPIC pin. Linux finds
// them through one `virtio_mmio.device=4K@0xADDR:IRQ` command-line parameter per device.
#pragma once

#include <cstdint>
#include <string>

#include "common/base/result.h"
#include "vmm/memory/layout.h"

namespace carapace::virtio {

struct MmioSlot {
  uint64_t base = 0;
  uint64_t size = 0;
  uint32_t irq = 0;

  // "virtio_mmio.device=4K@0xd0000000:5"
  std::string cmdline() const;
};

class MmioSlotAllocator {
 public:
  static constexpr uint64_t kSlotSize = 0x1000;
  static constexpr uint32_t kFirstIrq = 5;
  static constexpr uint32_t kLastIrq = 23;
  static constexpr uint32_t kReservedIrq = 4;  // COM1
  static constexpr uint64_t kWindowEnd = layout::kIoapicAddr;

  // The next free slot, or an error once IRQs (or the MMIO window) run out.
  Result<MmioSlot> allocate();
  uint32_t allocated() const { return count_; }

 private:
  uint32_t count_ = 0;
  uint32_t next_irq_ = kFirstIrq;
};

}  // namespace carapace::virtio
