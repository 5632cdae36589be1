#include "vmm/virtio/mmio_slots.h"

#include <cstdio>

namespace carapace::virtio {

std::string MmioSlot::cmdline() const {
  // Linux's virtio_mmio.device=<size>@<baseaddr>:<irq> (drivers/virtio/virtio_mmio.c).
  char buf[80];
  snprintf(buf, sizeof buf, "virtio_mmio.device=%lluK@0x%llx:%u",
           static_cast<unsigned long long>(size / 1024), static_cast<unsigned long long>(base),
           irq);
  return buf;
}

Result<MmioSlot> MmioSlotAllocator::allocate() {
  if (next_irq_ == kReservedIrq) ++next_irq_;
  if (next_irq_ > kLastIrq) return make_error("virtio-mmio: no interrupt left for another device");
  const uint64_t base = layout::kVirtioMmioBase + uint64_t{count_} * kSlotSize;
  if (base + kSlotSize > kWindowEnd)
    return make_error("virtio-mmio: no MMIO window left for another device");
  MmioSlot slot{base, kSlotSize, next_irq_};
  ++count_;
  ++next_irq_;
  return slot;
}

}  // namespace carapace::virtio
