// virtio-blk under load and over its lifecycle: requests in flight bounded by the queue size
// (docs/security.md #12), reset while io_uring requests are in flight, a corrupt ring, the rate
// limiter (throttle, resume from the timer), and the counters.
#include <gtest/gtest.h>

#include "tests/unit/devices/block/block_fixture.h"
#include "vmm/devices/block/disk_image.h"

namespace carapace::blocktest {
namespace {

constexpr uint64_t kImageSize = 4 << 20;
constexpr uint64_t kHour = 3600ull * 1000000000;

class BlockLifecycleTest : public BlockTest, public ::testing::WithParamInterface<BlockBackend> {
 protected:
  void SetUp() override {
    path_ = dir_.file("disk.img");
    write_file(path_, pattern(kImageSize));
  }
  void open(const RateLimiter::Config& limit = {}, uint16_t queue_size = 64,
            EventLoop* loop = nullptr) {
    auto img = block::open_raw_image(path_, false);
    ASSERT_TRUE(img.ok()) << img.error().describe();
    start(std::move(img).value(), GetParam(), limit, queue_size, loop);
    // Completions wait for the event loop (or a reset), so requests stay in flight on demand.
    dev_->set_reap_on_submit(false);
  }
  bool uring() const { return GetParam() == BlockBackend::kIoUring; }
  // 32 requests of 64 KiB, each on its own sectors and buffer, made available and notified once.
  void submit_32_large(uint32_t type) {
    for (uint16_t h = 0; h < 32; ++h)
      submit(h, type, h * 128ull, 65536, kBigData + h * 65536ull);
    dev_->queue_notify(0);
  }
  std::string path_;
};

// A loop that exists but never runs: the device submits to io_uring and returns, and nobody
// reaps the completions, so requests stay in flight for as long as the test wants.
class IdleLoop {
 public:
  IdleLoop() : loop_(std::move(EventLoop::create()).value()) {}
  EventLoop* get() { return loop_.get(); }

 private:
  std::unique_ptr<EventLoop> loop_;
};

TEST_P(BlockLifecycleTest, SecurityCheck12_InFlightRequestsAreBoundedByTheQueueSize) {
  IdleLoop idle;
  open({}, 16, idle.get());
  for (uint16_t h = 0; h < 16; ++h)
    submit(h, VIRTIO_BLK_T_IN, h * 8ull, 4096);
  dev_->queue_notify(0);
  if (!uring()) {  // the synchronous backend holds nothing: all answered at once
    EXPECT_EQ(dev_->in_flight(), 0u);
    EXPECT_EQ(ring_->used_idx(), 16);
    stop();  // before the idle loop goes away
    return;
  }
  EXPECT_EQ(dev_->in_flight(), 16u);
  // The guest makes 16 more available without reaping anything (re-using the heads): the
  // device may not take them while 16 are unfinished.
  for (uint16_t h = 0; h < 16; ++h)
    ring_->publish(h);
  dev_->queue_notify(0);
  dev_->queue_notify(0);
  EXPECT_EQ(dev_->in_flight(), 16u);
  EXPECT_EQ(ring_->used_idx(), 0);
  // A reset drops all of them safely.
  wr(MmioReg::kStatus, 0);
  EXPECT_EQ(dev_->in_flight(), 0u);
  EXPECT_EQ(ring_->used_idx(), 0);
  stop();
}

TEST_P(BlockLifecycleTest, ResetWithRequestsInFlightDropsThemAndTheDeviceWorksAfter) {
  IdleLoop idle;
  open({}, 64, idle.get());
  submit_32_large(VIRTIO_BLK_T_IN);
  if (uring()) {
    EXPECT_EQ(dev_->in_flight(), 32u);
  }
  const uint16_t used_before = ring_->used_idx();
  wr(MmioReg::kStatus, 0);  // reset: the transport calls VirtioBlock::reset()
  EXPECT_EQ(dev_->in_flight(), 0u);
  EXPECT_EQ(ring_->used_idx(), used_before);  // no completion written after the reset
  // The driver starts again; the device serves as new.
  stop();
  auto loop = start_loop();
  open({}, 64, loop);
  submit(0, VIRTIO_BLK_T_IN, 8, 4096);
  notify();
  ASSERT_TRUE(wait_used(1));
  EXPECT_EQ(status(0), VIRTIO_BLK_S_OK);
  auto all = pattern(kImageSize);
  EXPECT_EQ(guest_bytes(data_addr(0), 4096),
            std::vector<uint8_t>(all.begin() + 4096, all.begin() + 8192));
}

TEST_P(BlockLifecycleTest, ResetRacingTheEventLoopNeverCrashes) {
  EventLoop* loop = start_loop();
  open({}, 64, loop);
  for (int round = 0; round < 40; ++round) {
    for (uint16_t h = 0; h < 16; ++h)
      submit(h, h % 2 ? VIRTIO_BLK_T_OUT : VIRTIO_BLK_T_IN, h * 128ull, 65536,
             kBigData + h * 65536ull);
    notify();
    if (round % 3) std::this_thread::sleep_for(std::chrono::microseconds(50 * (round % 5)));
    driver_ok();  // reset mid-flight, then initialise again
  }
  submit(0, VIRTIO_BLK_T_FLUSH, 0, 0);
  notify();
  ASSERT_TRUE(wait_used(1));
  EXPECT_EQ(status(0), VIRTIO_BLK_S_OK);
  EXPECT_EQ(dev_->in_flight(), 0u);
  stop();
  EXPECT_EQ(read_file(path_).size(), kImageSize);
}

TEST_P(BlockLifecycleTest, DestroyingTheDeviceWithRequestsInFlightIsSafe) {
  IdleLoop idle;
  open({}, 64, idle.get());
  submit_32_large(VIRTIO_BLK_T_OUT);
  stop();  // transport reset + device destruction with completions never reaped
  SUCCEED();
}

TEST_P(BlockLifecycleTest, CorruptRingGoesNeedsResetAndResetRecovers) {
  open();
  ring_->set_avail_idx(200);  // more than the queue size ahead (docs/security.md #4)
  notify();
  EXPECT_EQ(rd(MmioReg::kStatus) & kNeedsReset, kNeedsReset);
  EXPECT_EQ(ring_->used_idx(), 0);
  driver_ok();
  submit(0, VIRTIO_BLK_T_IN, 0, 512);
  notify();
  ASSERT_TRUE(wait_used(1));
  EXPECT_EQ(status(0), VIRTIO_BLK_S_OK);
}

TEST_P(BlockLifecycleTest, OpsLimitThrottlesAndTheNextNotifyRetries) {
  open({/*bytes=*/0, /*ops=*/2, /*refill_ns=*/kHour});
  for (uint16_t h = 0; h < 3; ++h)
    submit(h, VIRTIO_BLK_T_IN, h, 512);
  notify();
  ASSERT_TRUE(wait_used(2));
  EXPECT_TRUE(dev_->throttled());
  EXPECT_EQ(status(2), kStatusPoison);  // waiting, not failed
  notify();                             // still no tokens: nothing is lost or duplicated
  EXPECT_EQ(ring_->used_idx(), 2);
  auto c = dev_->counters();
  EXPECT_EQ(c.throttled, 1u);  // counted once per stall, not per retry
  EXPECT_EQ(c.requests, 2u);
}

TEST_P(BlockLifecycleTest, BytesLimitResumesFromTheTimer) {
  EventLoop* loop = start_loop();
  // 8 KiB per 20 ms: four 8 KiB reads need about 60 ms after the first.
  open({/*bytes=*/8192, /*ops=*/0, /*refill_ns=*/20 * 1000000}, 64, loop);
  const auto t0 = std::chrono::steady_clock::now();
  for (uint16_t h = 0; h < 4; ++h)
    submit(h, VIRTIO_BLK_T_IN, h * 16ull, 8192, kBigData + h * 8192ull);
  notify();
  ASSERT_TRUE(wait_used(4));
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_GE(ms, 50);
  for (uint16_t h = 0; h < 4; ++h)
    EXPECT_EQ(status(h), VIRTIO_BLK_S_OK);
  EXPECT_GE(dev_->counters().throttled, 1u);
  EXPECT_FALSE(dev_->throttled());
  stop();
}

TEST_P(BlockLifecycleTest, RequestLargerThanTheBucketStillGoesThrough) {
  EventLoop* loop = start_loop();
  open({/*bytes=*/4096, /*ops=*/0, /*refill_ns=*/10 * 1000000}, 64, loop);
  submit(0, VIRTIO_BLK_T_IN, 0, 65536, kBigData);  // 16 buckets' worth
  submit(1, VIRTIO_BLK_T_IN, 0, 65536, kBigData + 65536);
  notify();
  ASSERT_TRUE(wait_used(2));
  EXPECT_EQ(status(0), VIRTIO_BLK_S_OK);
  EXPECT_EQ(status(1), VIRTIO_BLK_S_OK);
  stop();
}

TEST_P(BlockLifecycleTest, CountersAddUp) {
  open();
  submit(0, VIRTIO_BLK_T_IN, 0, 4096);
  submit(1, VIRTIO_BLK_T_OUT, 8, 1024);
  submit(2, VIRTIO_BLK_T_FLUSH, 0, 0);
  submit(3, 77, 0, 0);
  notify();
  ASSERT_TRUE(wait_used(4));
  auto c = dev_->counters();
  EXPECT_EQ(c.requests, 4u);
  EXPECT_EQ(c.read_bytes, 4096u);
  EXPECT_EQ(c.write_bytes, 1024u);
  EXPECT_EQ(c.flushes, 1u);
  EXPECT_EQ(c.errors, 1u);
  EXPECT_EQ(c.io_errors, 0u);
  EXPECT_EQ(c.throttled, 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, BlockLifecycleTest, kBothBackends, backend_name);

}  // namespace
}  // namespace carapace::blocktest
