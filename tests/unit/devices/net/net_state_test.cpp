// virtio-net snapshots through the transport: a restored device serves the same rings (cursors
// kept) with the MAC of its own configuration (a clone's network identity); a device
// part it cannot read is refused (docs/security.md #22).
#include <gtest/gtest.h>

#include "tests/unit/devices/net/net_fixture.h"

namespace carapace::net::test {
namespace {

class NetStateTest : public NetFixture {
 protected:
  // Saves, destroys the device (it owns the backend socket), builds one from `config`.
  std::vector<uint8_t> save_and_rebuild(const NetDeviceConfig& config) {
    auto blob = t_->save_state();
    EXPECT_TRUE(blob.ok()) << blob.error().describe();
    t_.reset();
    net_.reset();
    dev_.reset();
    loop_->stop();
    make(config, /*with_loop=*/true);
    return blob.ok() ? *blob : std::vector<uint8_t>{};
  }
};

TEST_F(NetStateTest, RestoredDeviceKeepsItsRingsAndTakesTheNewMac) {
  make(base_config(), /*with_loop=*/true);
  init_driver();
  send_tx(test_frame(1));
  ASSERT_TRUE(wait_until([&] { return tx_used() == 1; }));
  ASSERT_TRUE(peer_recv(1000).has_value());

  NetDeviceConfig clone = base_config();
  clone.mac = {0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee};
  const auto blob = save_and_rebuild(clone);
  auto s = t_->restore_state(blob);
  ASSERT_TRUE(s.ok()) << s.error().describe();
  EXPECT_EQ(rd(MmioReg::kStatus), kAcknowledge | kDriver | kFeaturesOk | kDriverOk);
  EXPECT_EQ(read_config(0, 6), (std::vector<uint8_t>{0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}));

  // TX goes on in used slot 1; RX works with the new backend.
  send_tx(test_frame(2));
  ASSERT_TRUE(wait_until([&] { return tx_used() == 2; }));
  auto sent = peer_recv(1000);
  ASSERT_TRUE(sent.has_value());
  EXPECT_EQ(frame_seq(*sent), 2u);
  post_rx(2);
  notify(0);
  peer_send(test_frame(7));
  ASSERT_TRUE(wait_until([&] { return rx_used() == 1; }));
  auto got = take_rx();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(frame_seq(got[0]), 7u);
}

TEST_F(NetStateTest, SecurityCheck22_UnknownDevicePartVersionIsRefused) {
  make(base_config(), /*with_loop=*/true);
  init_driver();
  auto blob = save_and_rebuild(base_config());
  ASSERT_GE(blob.size(), 4u);
  blob[blob.size() - 4] = 9;  // the device part is its u32 version alone
  EXPECT_FALSE(t_->restore_state(blob).ok());
  EXPECT_EQ(rd(MmioReg::kStatus), 0u);
}

}  // namespace
}  // namespace carapace::net::test
