// virtio-blk snapshots: requests in flight on io_uring are completed before the state is saved
// (a restored queue starts with nothing in flight); a restored device serves the same ring; a
// drive of another capacity or mode is refused (docs/security.md #22).
#include <gtest/gtest.h>

#include "tests/unit/devices/block/block_fixture.h"
#include "vmm/devices/block/disk_image.h"

namespace carapace::blocktest {
namespace {

constexpr uint64_t kImageSize = 1 << 20;

class BlockStateTest : public BlockTest {
 protected:
  void SetUp() override {
    path_ = dir_.file("disk.img");
    write_file(path_, pattern(kImageSize));
  }
  // The devices go before the loop they registered with.
  void TearDown() override {
    t2_.reset();
    dev2_.reset();
    stop();
  }
  void open(BlockBackend backend, EventLoop* loop = nullptr) {
    auto img = block::open_raw_image(path_, false);
    ASSERT_TRUE(img.ok()) << img.error().describe();
    start(std::move(img).value(), backend, {}, 64, loop);
  }
  // A second VM's drive and transport over the same guest RAM.
  // The image is locked by whoever has it open: the source device must be gone first.
  Status restore_into(const std::string& path, bool read_only, const std::vector<uint8_t>& blob) {
    t_.reset();
    dev_.reset();
    t2_.reset();
    dev2_.reset();
    auto img = block::open_raw_image(path, read_only);
    if (!img.ok()) return img.take_error();
    auto dev = VirtioBlock::create(std::move(img).value(), "clone", {}, BlockBackend::kSync);
    if (!dev.ok()) return dev.take_error();
    dev2_ = *dev;
    t2_ = std::move(MmioTransport::create(dev2_, mem_, &irq_, nullptr, 0xd0000000)).value();
    return t2_->restore_state(blob);
  }
  uint32_t status2() {
    uint32_t v = 0;
    t2_->read(offset_of(MmioReg::kStatus), {reinterpret_cast<uint8_t*>(&v), 4});
    return v;
  }

  std::string path_;
  std::unique_ptr<EventLoop> idle_;
  std::shared_ptr<VirtioBlock> dev2_;
  std::shared_ptr<MmioTransport> t2_;
};

TEST_F(BlockStateTest, SaveCompletesRequestsInFlightOnIoUring) {
  // A loop that never runs: completions wait until someone reaps them.
  idle_ = std::move(EventLoop::create()).value();
  open(BlockBackend::kIoUring, idle_.get());
  ASSERT_TRUE(dev_->using_io_uring()) << "io_uring is needed for this test";
  dev_->set_reap_on_submit(false);
  for (uint16_t h = 0; h < 8; ++h)
    submit(h, VIRTIO_BLK_T_IN, h * 8ull, 4096);
  dev_->queue_notify(0);  // what the loop would do on the notify
  ASSERT_EQ(dev_->in_flight(), 8u);
  auto blob = t_->save_state();
  ASSERT_TRUE(blob.ok()) << blob.error().describe();
  EXPECT_EQ(dev_->in_flight(), 0u);
  ASSERT_EQ(ring_->used_idx(), 8);
  for (uint16_t h = 0; h < 8; ++h) {
    EXPECT_EQ(status(h), VIRTIO_BLK_S_OK);
    const auto want = pattern(kImageSize);
    EXPECT_EQ(guest_bytes(data_addr(h), 4096),
              std::vector<uint8_t>(want.begin() + h * 4096, want.begin() + (h + 1) * 4096));
  }
}

TEST_F(BlockStateTest, RestoredDeviceServesTheSameRing) {
  open(BlockBackend::kSync);
  submit(0, VIRTIO_BLK_T_IN, 0, 512);
  notify();
  ASSERT_EQ(ring_->used_idx(), 1);
  auto blob = t_->save_state();
  ASSERT_TRUE(blob.ok()) << blob.error().describe();
  auto s = restore_into(path_, false, *blob);
  ASSERT_TRUE(s.ok()) << s.error().describe();
  EXPECT_EQ(status2(), 15u);
  submit(1, VIRTIO_BLK_T_IN, 8, 512);
  t2_->write(offset_of(MmioReg::kQueueNotify), std::vector<uint8_t>{0, 0, 0, 0});
  ASSERT_EQ(ring_->used_idx(), 2);
  EXPECT_EQ(ring_->used(1).id, 1u);
  EXPECT_EQ(status(1), VIRTIO_BLK_S_OK);
  const auto want = pattern(kImageSize);
  EXPECT_EQ(guest_bytes(data_addr(1), 512),
            std::vector<uint8_t>(want.begin() + 4096, want.begin() + 4096 + 512));
}

TEST_F(BlockStateTest, SecurityCheck22_DriveOfAnotherCapacityOrModeIsRefused) {
  open(BlockBackend::kSync);
  auto blob = t_->save_state();
  ASSERT_TRUE(blob.ok());
  const std::string smaller = dir_.file("smaller.img");
  write_file(smaller, pattern(kImageSize / 2));
  auto s = restore_into(smaller, false, *blob);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("sectors"), std::string::npos) << s.error().message;
  EXPECT_EQ(status2(), 0u);
  // Read-only: the device offers VIRTIO_BLK_F_RO, the saved driver features differ; refused
  // either way.
  EXPECT_FALSE(restore_into(path_, true, *blob).ok());
  EXPECT_EQ(status2(), 0u);
  EXPECT_TRUE(restore_into(path_, false, *blob).ok());
}

}  // namespace
}  // namespace carapace::blocktest
