// virtio-rng end to end through MmioTransport: random bytes land in the writable buffers, the
// used length says how many, the rate limiter throttles and resumes, a corrupt ring goes
// NEEDS_RESET.
#include "vmm/devices/rng/rng.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/unit/virtio/mmio_access.h"
#include "vmm/virtio/mmio_transport.h"

namespace carapace {
namespace {

using namespace virtio;
using namespace virtio::fake;

class RngTest : public ::testing::Test {
 protected:
  void start(const RateLimiter::Config& limit, EventLoop* loop = nullptr) {
    rng_ = std::move(VirtioRng::create(limit)).value();
    t_ = std::move(MmioTransport::create(rng_, mem_, &irq_, loop, 0xd0000000)).value();
    mmio_version1_driver_ok(*t_, ring_);
    EXPECT_EQ(rd(MmioReg::kQueueNumMax), VirtioRng::kQueueSize);  // queue 0 is still selected
    EXPECT_EQ(rd(MmioReg::kDeviceId), 4u);
  }
  uint32_t rd(MmioReg r) { return mmio_read32(*t_, r); }
  void wr(MmioReg r, uint32_t v) { mmio_write32(*t_, r, v); }
  void request(uint16_t head, uint32_t len) {
    ring_.fill(kBufferBase + head * 0x1000ull, 0, len);
    ring_.set_desc(head, kBufferBase + head * 0x1000ull, len, kDescFWrite);
    ring_.publish(head);
  }

  GuestMemory mem_ = make_memory();
  TestRing ring_{mem_, 16};
  CountingIrq irq_;
  std::shared_ptr<VirtioRng> rng_;
  std::shared_ptr<MmioTransport> t_;
};

TEST_F(RngTest, FillsWritableBuffersWithRandomBytes) {
  start({});
  request(0, 64);
  request(1, 4096);
  wr(MmioReg::kQueueNotify, 0);
  ASSERT_EQ(ring_.used_idx(), 2);
  EXPECT_EQ(ring_.used(0).len, 64u);
  EXPECT_EQ(ring_.used(1).len, 4096u);
  auto bytes = ring_.bytes(kBufferBase + 0x1000, 4096);
  int zeros = 0;
  for (uint8_t b : bytes)
    zeros += b == 0;
  EXPECT_LT(zeros, 100);  // ~16 expected for random bytes
  EXPECT_EQ(rng_->bytes_served(), 4160u);
  EXPECT_EQ(rd(MmioReg::kInterruptStatus), kIntUsedBuffer);
}

TEST_F(RngTest, ReadOnlyChainCompletesEmpty) {
  start({});
  ring_.set_desc(0, kBufferBase, 16, 0);
  ring_.publish(0);
  wr(MmioReg::kQueueNotify, 0);
  ASSERT_EQ(ring_.used_idx(), 1);
  EXPECT_EQ(ring_.used(0).len, 0u);
  EXPECT_EQ(t_->errors().bad_request, 1u);
}

TEST_F(RngTest, RateLimitGrantsPartiallyThenThrottles) {
  start({/*bytes=*/100, /*ops=*/0, /*refill_ns=*/3600ull * 1000000000});
  request(0, 64);
  request(1, 64);
  request(2, 64);
  wr(MmioReg::kQueueNotify, 0);
  ASSERT_EQ(ring_.used_idx(), 2);
  EXPECT_EQ(ring_.used(0).len, 64u);
  EXPECT_EQ(ring_.used(1).len, 36u);  // what was left in the bucket
  EXPECT_TRUE(rng_->throttled());
  wr(MmioReg::kQueueNotify, 0);  // still throttled: the request waits, nothing is lost
  EXPECT_EQ(ring_.used_idx(), 2);
}

TEST_F(RngTest, ThrottledRequestResumesFromTheTimer) {
  auto loop = EventLoop::create();
  ASSERT_TRUE(loop.ok());
  (*loop)->start_thread();
  start({/*bytes=*/64, /*ops=*/0, /*refill_ns=*/20 * 1000000}, loop->get());
  request(0, 64);
  request(1, 64);
  wr(MmioReg::kQueueNotify, 0);
  bool done = false;
  for (int i = 0; i < 500 && !done; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    done = ring_.used_idx() == 2;
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(ring_.used(1).len, 64u);
  t_.reset();
  (*loop)->stop();
}

TEST_F(RngTest, CorruptRingGoesNeedsReset) {
  start({});
  ring_.set_avail_idx(100);
  wr(MmioReg::kQueueNotify, 0);
  EXPECT_EQ(rd(MmioReg::kStatus), 15u | 0x40u);
  EXPECT_EQ(ring_.used_idx(), 0);
  wr(MmioReg::kStatus, 0);
  EXPECT_EQ(rd(MmioReg::kStatus), 0u);
}

}  // namespace
}  // namespace carapace
