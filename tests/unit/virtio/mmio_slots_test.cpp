// Slot allocation for virtio-mmio devices and the kernel command-line announcement.
#include "vmm/virtio/mmio_slots.h"

#include <gtest/gtest.h>

namespace carapace::virtio {
namespace {

TEST(MmioSlotsTest, SlotsAreConsecutivePagesWithIrqsFromFive) {
  MmioSlotAllocator alloc;
  auto a = alloc.allocate();
  auto b = alloc.allocate();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->base, layout::kVirtioMmioBase);
  EXPECT_EQ(a->irq, 5u);
  EXPECT_EQ(b->base, layout::kVirtioMmioBase + 0x1000);
  EXPECT_EQ(b->irq, 6u);
  EXPECT_EQ(a->cmdline(), "virtio_mmio.device=4K@0xd0000000:5");
  EXPECT_EQ(b->cmdline(), "virtio_mmio.device=4K@0xd0001000:6");
}

TEST(MmioSlotsTest, RunsOutAfterIrq23AndNeverHandsOutIrq4) {
  MmioSlotAllocator alloc;
  for (uint32_t irq = 5; irq <= 23; ++irq) {
    auto s = alloc.allocate();
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->irq, irq);
    EXPECT_NE(s->irq, 4u);
  }
  EXPECT_FALSE(alloc.allocate().ok());
  EXPECT_EQ(alloc.allocated(), 19u);
}

}  // namespace
}  // namespace carapace::virtio
