// docs/security.md #6-#11 at the virtio-mmio register level, and the eventfd notification path
// (what KVM's ioeventfd feeds) through a real EventLoop.
#include <sys/eventfd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/unit/virtio/mmio_driver.h"
#include "vmm/virtio/mmio_transport.h"

namespace carapace::virtio {
namespace {

using namespace fake;
using MmioSecurityTest = MmioDriverTest;

TEST_F(MmioSecurityTest, SecurityCheck6_BadQueueSizesRefusedAtQueueReady) {
  begin_init();
  write_driver_features(kFVersion1);
  add_status(kFeaturesOk);
  for (uint32_t bad : {0u, 12u, 32u, 0x10010u}) {  // zero, not a power of 2, > max 16, > 16 bits
    wr(MmioReg::kQueueSel, 0);
    ring0_.state.size = 16;
    setup_queue(0, ring0_);
    wr(MmioReg::kQueueReady, 0);
    wr(MmioReg::kQueueNum, bad);
    wr(MmioReg::kQueueReady, 1);
    EXPECT_EQ(rd(MmioReg::kQueueReady), 0u) << "size " << bad;
  }
  EXPECT_EQ(t_->errors().refused_queue, 4u);
}

TEST_F(MmioSecurityTest, SecurityCheck7_QueueRegistersFrozenOnceReady) {
  begin_init();
  write_driver_features(kDriverFeatures);
  add_status(kFeaturesOk);
  setup_queue(0, ring0_);
  wr(MmioReg::kQueueNum, 4);
  wr(MmioReg::kQueueDescLow, 0x1000);
  wr(MmioReg::kQueueDeviceHigh, 1);
  EXPECT_EQ(rd(MmioReg::kQueueNum), 16u);
  EXPECT_EQ(rd(MmioReg::kQueueDescLow), kDescAddr);
  EXPECT_EQ(rd(MmioReg::kQueueDeviceHigh), 0u);
  setup_queue(1, ring1_);
  add_status(kDriverOk);
  // After DRIVER_OK nothing moves, not even QueueReady = 0 or an unready queue's registers.
  wr(MmioReg::kQueueSel, 0);
  wr(MmioReg::kQueueReady, 0);
  wr(MmioReg::kQueueDescLow, 0x60000);
  EXPECT_EQ(rd(MmioReg::kQueueReady), 1u);
  EXPECT_EQ(rd(MmioReg::kQueueDescLow), kDescAddr);
  // The device keeps using the rings captured at activation.
  submit_echo(ring0_, 0, {5, 6});
  wr(MmioReg::kQueueNotify, 0);
  EXPECT_EQ(ring0_.used_idx(), 1);
  EXPECT_GE(t_->errors().bad_register_access, 5u);
}

TEST_F(MmioSecurityTest, SecurityCheck7_QueueReadyZeroBeforeDriverOkAllowsReconfiguring) {
  begin_init();
  write_driver_features(kDriverFeatures);
  add_status(kFeaturesOk);
  setup_queue(0, ring0_);
  wr(MmioReg::kQueueReady, 0);  // Linux's error path in find_vqs
  wr(MmioReg::kQueueNum, 8);
  EXPECT_EQ(rd(MmioReg::kQueueNum), 8u);
}

TEST_F(MmioSecurityTest, SecurityCheck8_QueueSelBeyondQueuesIsHarmless) {
  begin_init();
  for (uint32_t sel : {2u, 3u, 0x8000u, 0xffffffffu}) {
    wr(MmioReg::kQueueSel, sel);
    EXPECT_EQ(rd(MmioReg::kQueueNumMax), 0u);
    EXPECT_EQ(rd(MmioReg::kQueueReady), 0u);
    EXPECT_EQ(rd(MmioReg::kQueueNum), 0u);
    for (MmioReg r : {MmioReg::kQueueNum, MmioReg::kQueueDescLow, MmioReg::kQueueDescHigh,
                      MmioReg::kQueueDriverLow, MmioReg::kQueueDriverHigh, MmioReg::kQueueDeviceLow,
                      MmioReg::kQueueDeviceHigh, MmioReg::kQueueReady})
      wr(r, 0x1000);
    EXPECT_EQ(rd(MmioReg::kQueueDescLow), 0u);
    wr(MmioReg::kQueueNotify, sel);
  }
  // The real queues were not touched.
  wr(MmioReg::kQueueSel, 0);
  EXPECT_EQ(rd(MmioReg::kQueueNum), 0u);
  EXPECT_EQ(rd(MmioReg::kQueueNumMax), 16u);
  EXPECT_EQ(dev_->notifies, 0);
}

TEST_F(MmioSecurityTest, SecurityCheck9_OddWidthsAndUnalignedRegisterAccesses) {
  for (size_t width : {1u, 2u, 8u}) {
    for (uint64_t off = 0; off < 0x100; ++off) {
      std::vector<uint8_t> buf(width, 0xaa);
      t_->read(off, buf);
      EXPECT_EQ(buf, std::vector<uint8_t>(width, 0)) << "width " << width << " at " << off;
      t_->write(off, buf);
    }
  }
  std::vector<uint8_t> four(4, 0xaa);
  t_->read(offset_of(MmioReg::kMagicValue) + 2, four);
  EXPECT_EQ(four, std::vector<uint8_t>(4, 0));
  const uint8_t ack[4] = {1, 0, 0, 0};
  t_->write(offset_of(MmioReg::kStatus) + 1, ack);
  EXPECT_EQ(rd(MmioReg::kStatus), 0u);
  const uint8_t ack2[2] = {1, 0};
  t_->write(offset_of(MmioReg::kStatus), ack2);
  EXPECT_EQ(rd(MmioReg::kStatus), 0u);
  EXPECT_GT(t_->errors().bad_register_access, 0u);
}

TEST_F(MmioSecurityTest, SecurityCheck9_ConfigSpaceAnyWidthAndPartialWrites) {
  // Reads of every width at every offset up to the end of the 4 KiB window.
  for (size_t width : {1u, 2u, 4u, 8u}) {
    for (uint64_t off = 0x100; off + width <= kMmioWindowSize; off += 3) {
      std::vector<uint8_t> buf(width, 0xaa);
      t_->read(off, buf);
      if (off >= 0x108) {
        EXPECT_EQ(buf, std::vector<uint8_t>(width, 0)) << off;
      }
    }
  }
  uint8_t magic[4];
  t_->read(0x100, magic);
  EXPECT_EQ(std::memcmp(magic, "echo", 4), 0);
  // An 8-byte read straddling the end of the device's config.
  uint8_t straddle[8];
  t_->read(0x104, straddle);
  EXPECT_EQ(straddle[7], 0);
  // Partial writes: one byte in the middle of the scratch word, then 2 bytes over its end.
  const uint8_t b = 0x5a;
  t_->write(0x106, {&b, 1});
  const uint8_t two[2] = {0x11, 0x22};
  t_->write(0x107, two);
  const uint8_t wide[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  t_->write(0x100, wide);  // the read-only magic stays
  t_->write(0xff8, wide);
  uint8_t cfg[8];
  t_->read(0x100, cfg);
  EXPECT_EQ(std::memcmp(cfg, "echo", 4), 0);
  EXPECT_EQ(cfg[4], 5);
  EXPECT_EQ(cfg[7], 8);
}

TEST_F(MmioSecurityTest, SecurityCheck10_MisalignedOrOverlappingRingsRefusedAtQueueReady) {
  begin_init();
  write_driver_features(kDriverFeatures);
  add_status(kFeaturesOk);
  struct Case {
    uint64_t desc, avail, used;
  };
  for (Case c :
       {Case{kDescAddr + 8, kAvailAddr, kUsedAddr}, Case{kDescAddr, kAvailAddr + 1, kUsedAddr},
        Case{kDescAddr, kAvailAddr, kUsedAddr + 2}, Case{kDescAddr, kDescAddr + 64, kUsedAddr},
        Case{kDescAddr, kAvailAddr, kAvailAddr + 8},
        Case{kDescAddr, kAvailAddr, kRegion0Size - 64},  // runs off RAM
        Case{0xfffffffffffffff0ull, kAvailAddr, kUsedAddr}}) {
    TestRing bad(mem_, 16, c.desc, c.avail, c.used);
    setup_queue(0, bad);
    EXPECT_EQ(rd(MmioReg::kQueueReady), 0u);
  }
  EXPECT_EQ(t_->errors().refused_queue, 7u);
  // A refused queue can be fixed and made ready.
  setup_queue(0, ring0_);
  EXPECT_EQ(rd(MmioReg::kQueueReady), 1u);
}

TEST_F(MmioSecurityTest, SecurityCheck11_NotifyForMissingOrNotReadyQueueIgnored) {
  wr(MmioReg::kQueueNotify, 0);  // before any setup
  init_linux(kDriverFeatures, /*queues=*/1);
  for (uint32_t q : {1u, 2u, 0xffffu, 0xffffffffu})
    wr(MmioReg::kQueueNotify, q);
  EXPECT_EQ(dev_->notifies, 0);
  wr(MmioReg::kQueueNotify, 0);
  EXPECT_EQ(dev_->notifies, 1);
}

class RecordingRegistrar : public IoEventRegistrar {
 public:
  struct Entry {
    uint64_t addr;
    uint32_t len;
    uint64_t datamatch;
    int fd;
  };
  Status register_ioevent(uint64_t addr, uint32_t len, uint64_t datamatch,
                          const EventFd& fd) override {
    entries.push_back({addr, len, datamatch, fd.fd()});
    return {};
  }
  std::vector<Entry> entries;
};

bool wait_for(const std::function<bool()>& cond) {
  for (int i = 0; i < 500; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST_F(MmioSecurityTest, NotificationsThroughEventFdsOnTheEventLoop) {
  auto loop = EventLoop::create();
  ASSERT_TRUE(loop.ok());
  (*loop)->start_thread();
  make_transport(loop->get());
  RecordingRegistrar reg;
  ASSERT_TRUE(t_->register_ioevents(reg).ok());
  ASSERT_EQ(reg.entries.size(), 2u);
  EXPECT_EQ(reg.entries[1].addr, kMmioBase + 0x50);
  EXPECT_EQ(reg.entries[1].len, 4u);
  EXPECT_EQ(reg.entries[1].datamatch, 1u);
  EXPECT_EQ(reg.entries[1].fd, t_->queue_event(1).fd());

  init_linux();
  // As KVM would on an ioeventfd match: the eventfd alone wakes the device.
  submit_echo(ring0_, 0, {1, 2, 3});
  ASSERT_TRUE(t_->queue_event(0).write(1).ok());
  EXPECT_TRUE(wait_for([&] { return ring0_.used_idx() == 1; }));
  // A QueueNotify write that exits to user space takes the same path.
  submit_echo(ring0_, 2, {4});
  wr(MmioReg::kQueueNotify, 0);
  EXPECT_TRUE(wait_for([&] { return ring0_.used_idx() == 2; }));
  EXPECT_TRUE(wait_for([&] { return irq_.count >= 1; }));
  // Reset unhooks the queues from the loop; the loop and VMM carry on.
  wr(MmioReg::kStatus, 0);
  const int notifies = dev_->notifies;
  ASSERT_TRUE(t_->queue_event(0).write(1).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(dev_->notifies, notifies);
  t_.reset();
  (*loop)->stop();
}

}  // namespace
}  // namespace carapace::virtio
