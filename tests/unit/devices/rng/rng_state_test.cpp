// virtio-rng snapshots through the transport: a restored device goes on serving the same ring
// where the saved one stopped; a device part it cannot read is refused (docs/security.md #22).
#include <gtest/gtest.h>

#include "tests/unit/virtio/mmio_access.h"
#include "vmm/devices/rng/rng.h"
#include "vmm/virtio/mmio_transport.h"

namespace carapace {
namespace {

using namespace virtio;
using namespace virtio::fake;

class RngStateTest : public ::testing::Test {
 protected:
  std::shared_ptr<MmioTransport> make() {
    auto t = std::move(MmioTransport::create(std::move(VirtioRng::create({})).value(), mem_,
                                             nullptr, nullptr, 0xd0000000))
                 .value();
    return t;
  }
  static uint32_t rd(MmioTransport& t, MmioReg r) { return mmio_read32(t, r); }
  static void wr(MmioTransport& t, MmioReg r, uint32_t v) { mmio_write32(t, r, v); }
  void driver_ok(MmioTransport& t) { mmio_version1_driver_ok(t, ring_); }
  void request(uint16_t head) {
    ring_.set_desc(head, kBufferBase + head * 0x1000ull, 256, kDescFWrite);
    ring_.publish(head);
  }

  GuestMemory mem_ = make_memory();
  TestRing ring_{mem_, 16};
};

TEST_F(RngStateTest, RestoredDeviceServesTheSameRing) {
  auto a = make();
  driver_ok(*a);
  request(0);
  wr(*a, MmioReg::kQueueNotify, 0);
  ASSERT_EQ(ring_.used_idx(), 1);
  request(1);  // made available, never notified: served after restore
  auto blob = a->save_state();
  ASSERT_TRUE(blob.ok()) << blob.error().describe();

  auto b = make();
  auto s = b->restore_state(*blob);
  ASSERT_TRUE(s.ok()) << s.error().describe();
  EXPECT_EQ(rd(*b, MmioReg::kStatus), 15u);
  EXPECT_EQ(ring_.used_idx(), 2);
  EXPECT_EQ(ring_.used(1).id, 1u);
  EXPECT_EQ(ring_.used(1).len, 256u);
  request(2);
  wr(*b, MmioReg::kQueueNotify, 0);
  EXPECT_EQ(ring_.used_idx(), 3);
}

TEST_F(RngStateTest, NotYetDrivenDeviceRoundTrips) {
  auto a = make();
  wr(*a, MmioReg::kStatus, 1);
  auto blob = a->save_state();
  ASSERT_TRUE(blob.ok());
  auto b = make();
  ASSERT_TRUE(b->restore_state(*blob).ok());
  EXPECT_EQ(rd(*b, MmioReg::kStatus), 1u);
}

TEST_F(RngStateTest, SecurityCheck22_BadDevicePartIsRefused) {
  auto a = make();
  driver_ok(*a);
  auto blob = a->save_state();
  ASSERT_TRUE(blob.ok());
  auto bad_version = *blob;
  bad_version[bad_version.size() - 4] = 2;
  auto b = make();
  EXPECT_FALSE(b->restore_state(bad_version).ok());
  EXPECT_EQ(rd(*b, MmioReg::kStatus), 0u);
  // One more byte in the device part (its length says so).
  std::vector<uint8_t> extra(blob->size() + 1, 0);
  std::copy(blob->begin(), blob->end(), extra.begin());
  extra[blob->size() - 8] = 5;
  EXPECT_FALSE(b->restore_state(extra).ok());
  EXPECT_EQ(rd(*b, MmioReg::kStatus), 0u);
  EXPECT_TRUE(b->restore_state(*blob).ok());
}

}  // namespace
}  // namespace carapace
