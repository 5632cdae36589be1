// A test driver's hands on an MmioTransport: 32-bit register reads and writes, an interrupt line
// that counts its triggers, and the register writes that put one queue on a TestRing's rings.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>

#include "tests/unit/virtio/test_ring.h"
#include "vmm/virtio/mmio_transport.h"

namespace carapace::virtio::fake {

class CountingIrq : public Interrupt {
 public:
  void trigger() override { ++count; }
  std::atomic<int> count{0};
};

// The transport fills every byte it is asked for; the poison shows one it did not.
inline uint32_t mmio_read32(MmioTransport& t, MmioReg r) {
  uint32_t v = 0xdeadbeef;
  t.read(offset_of(r), {reinterpret_cast<uint8_t*>(&v), 4});
  return v;
}
inline void mmio_write32(MmioTransport& t, MmioReg r, uint32_t v) {
  t.write(offset_of(r), {reinterpret_cast<uint8_t*>(&v), 4});
}

// Selects queue `index`, gives it `ring`'s size and addresses and sets QueueReady. The fake
// rings lie below 4 GiB, so the high halves keep their reset value of 0.
inline void mmio_set_queue(MmioTransport& t, uint32_t index, const TestRing& ring) {
  mmio_write32(t, MmioReg::kQueueSel, index);
  mmio_write32(t, MmioReg::kQueueNum, ring.state.size);
  mmio_write32(t, MmioReg::kQueueDescLow, static_cast<uint32_t>(ring.state.desc_table));
  mmio_write32(t, MmioReg::kQueueDriverLow, static_cast<uint32_t>(ring.state.avail_ring));
  mmio_write32(t, MmioReg::kQueueDeviceLow, static_cast<uint32_t>(ring.state.used_ring));
  mmio_write32(t, MmioReg::kQueueReady, 1);
}

// The shortest driver for a one-queue device: ACKNOWLEDGE, DRIVER, VIRTIO_F_VERSION_1 alone,
// FEATURES_OK, queue 0 on `ring`, DRIVER_OK, which the device must accept.
inline void mmio_version1_driver_ok(MmioTransport& t, const TestRing& ring) {
  mmio_write32(t, MmioReg::kStatus, 1);
  mmio_write32(t, MmioReg::kStatus, 3);
  mmio_write32(t, MmioReg::kDriverFeaturesSel, 1);
  mmio_write32(t, MmioReg::kDriverFeatures, 1);  // VIRTIO_F_VERSION_1 (bit 32)
  mmio_write32(t, MmioReg::kStatus, 11);
  mmio_set_queue(t, 0, ring);
  mmio_write32(t, MmioReg::kStatus, 15);
  ASSERT_EQ(mmio_read32(t, MmioReg::kStatus), 15u);
}

}  // namespace carapace::virtio::fake
