// A test fixture that plays Linux's virtio_mmio driver (drivers/virtio/virtio_mmio.c and
// virtio.c) against an MmioTransport wrapping the echo device.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "tests/unit/virtio/echo_device.h"
#include "tests/unit/virtio/mmio_access.h"
#include "tests/unit/virtio/test_ring.h"
#include "vmm/virtio/mmio_transport.h"

namespace carapace::virtio::fake {

inline constexpr uint32_t kStatusLive = kAcknowledge | kDriver | kFeaturesOk | kDriverOk;
inline constexpr uint64_t kDriverFeatures =
    kFVersion1 | kFEventIdx | kFIndirectDesc | EchoDevice::kFeatureUpper;
inline constexpr uint64_t kMmioBase = 0xd0000000;
// Queue 1's rings, clear of queue 0's.
inline constexpr uint64_t kDesc1 = 0x50000, kAvail1 = 0x51000, kUsed1 = 0x52000;

class MmioDriverTest : public ::testing::Test {
 protected:
  MmioDriverTest() { make_transport(nullptr); }

  void make_transport(EventLoop* loop) {
    t_ = std::move(MmioTransport::create(dev_, mem_, &irq_, loop, kMmioBase)).value();
  }

  uint32_t rd(MmioReg r) { return mmio_read32(*t_, r); }
  void wr(MmioReg r, uint32_t v) { mmio_write32(*t_, r, v); }
  void add_status(uint32_t bits) { wr(MmioReg::kStatus, rd(MmioReg::kStatus) | bits); }

  // register_virtio_device(): identify, reset, ACKNOWLEDGE; virtio_dev_probe(): DRIVER.
  void begin_init() {
    ASSERT_EQ(rd(MmioReg::kMagicValue), kMmioMagic);
    ASSERT_EQ(rd(MmioReg::kVersion), 2u);
    ASSERT_NE(rd(MmioReg::kDeviceId), 0u);
    (void)rd(MmioReg::kVendorId);
    wr(MmioReg::kStatus, 0);
    add_status(kAcknowledge);
    add_status(kDriver);
  }
  uint64_t read_device_features() {
    wr(MmioReg::kDeviceFeaturesSel, 1);
    uint64_t f = uint64_t{rd(MmioReg::kDeviceFeatures)} << 32;
    wr(MmioReg::kDeviceFeaturesSel, 0);
    return f | rd(MmioReg::kDeviceFeatures);
  }
  void write_driver_features(uint64_t f) {
    wr(MmioReg::kDriverFeaturesSel, 1);
    wr(MmioReg::kDriverFeatures, static_cast<uint32_t>(f >> 32));
    wr(MmioReg::kDriverFeaturesSel, 0);
    wr(MmioReg::kDriverFeatures, static_cast<uint32_t>(f));
  }
  // vm_setup_vq().
  void setup_queue(uint32_t index, const TestRing& ring) {
    wr(MmioReg::kQueueSel, index);
    ASSERT_EQ(rd(MmioReg::kQueueReady), 0u);
    ASSERT_GE(rd(MmioReg::kQueueNumMax), ring.state.size);
    wr(MmioReg::kQueueNum, ring.state.size);
    wr(MmioReg::kQueueDescLow, static_cast<uint32_t>(ring.state.desc_table));
    wr(MmioReg::kQueueDescHigh, static_cast<uint32_t>(ring.state.desc_table >> 32));
    wr(MmioReg::kQueueDriverLow, static_cast<uint32_t>(ring.state.avail_ring));
    wr(MmioReg::kQueueDriverHigh, static_cast<uint32_t>(ring.state.avail_ring >> 32));
    wr(MmioReg::kQueueDeviceLow, static_cast<uint32_t>(ring.state.used_ring));
    wr(MmioReg::kQueueDeviceHigh, static_cast<uint32_t>(ring.state.used_ring >> 32));
    wr(MmioReg::kQueueReady, 1);
  }
  void init_linux(uint64_t features = kDriverFeatures, int queues = 2) {
    begin_init();
    features &= read_device_features();
    write_driver_features(features);
    add_status(kFeaturesOk);
    ASSERT_TRUE(rd(MmioReg::kStatus) & kFeaturesOk);
    setup_queue(0, ring0_);
    if (queues > 1) setup_queue(1, ring1_);
    add_status(kDriverOk);
  }
  void fresh_rings() {
    ring0_.clear();
    ring1_.clear();
  }
  // A readable buffer with `data` and a writable one of the same size at kBufferBase + 0x800.
  void submit_echo(TestRing& ring, uint16_t head, const std::vector<uint8_t>& data) {
    (void)mem_.write(GuestAddress(kBufferBase), data);
    ring.set_desc(head, kBufferBase, static_cast<uint32_t>(data.size()), kDescFNext, head + 1);
    ring.set_desc(head + 1, kBufferBase + 0x800, static_cast<uint32_t>(data.size()), kDescFWrite);
    ring.publish(head);
  }

  GuestMemory mem_ = make_memory();
  std::shared_ptr<EchoDevice> dev_ = std::make_shared<EchoDevice>();
  CountingIrq irq_;
  TestRing ring0_{mem_, 16};
  TestRing ring1_{mem_, 8, kDesc1, kAvail1, kUsed1};
  std::shared_ptr<MmioTransport> t_;
};

}  // namespace carapace::virtio::fake
