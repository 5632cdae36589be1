// virtio-net end to end through MmioTransport and the Unix datagram backend, with a real peer
// socket as the host side of the wire: configuration, TX and RX, drops by reason, the egress
// policy. Flow control, rate limiting and resets are in net_flow_test.cpp.
#include <gtest/gtest.h>

#include "tests/unit/devices/net/net_fixture.h"
#include "vmm/cli/device_args.h"

namespace carapace::net::test {
namespace {

using NetDeviceTest = NetFixture;

TEST_F(NetDeviceTest, IdentityFeaturesAndConfigSpace) {
  make(base_config());
  EXPECT_EQ(rd(MmioReg::kDeviceId), 1u);
  wr(MmioReg::kDeviceFeaturesSel, 0);
  const uint32_t low = rd(MmioReg::kDeviceFeatures);
  EXPECT_TRUE(low & (1u << kFMac));
  EXPECT_TRUE(low & (1u << kFStatus));
  // No offloads and no mergeable buffers are offered.
  EXPECT_FALSE(low & (1u << kFCsum));
  EXPECT_FALSE(low & (1u << kFGuestCsum));
  EXPECT_FALSE(low & (1u << kFMrgRxbuf));
  EXPECT_FALSE(low & (1u << kFCtrlVq));
  for (uint32_t q : {0u, 1u}) {
    wr(MmioReg::kQueueSel, q);
    EXPECT_EQ(rd(MmioReg::kQueueNumMax), NetDevice::kQueueSize);
  }
  wr(MmioReg::kQueueSel, 2);
  EXPECT_EQ(rd(MmioReg::kQueueNumMax), 0u);
  EXPECT_EQ(read_config(0, 6), (std::vector<uint8_t>{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}));
  EXPECT_EQ(read_config(6, 2), (std::vector<uint8_t>{kStatusLinkUp, 0}));
  // Odd widths and offsets, and reads past the struct, are harmless (docs/security.md #9).
  EXPECT_EQ(read_config(3, 1), (std::vector<uint8_t>{0x33}));
  EXPECT_EQ(read_config(8, 4), (std::vector<uint8_t>{0, 0, 0, 0}));
  // Writes do not change the MAC.
  uint32_t junk = 0xffffffff;
  t_->write(offset_of(MmioReg::kConfig), {reinterpret_cast<uint8_t*>(&junk), 4});
  EXPECT_EQ(read_config(0, 6), (std::vector<uint8_t>{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}));
}

TEST_F(NetDeviceTest, GeneratedMacIsLocallyAdministeredUnicast) {
  NetDeviceConfig c = base_config();
  c.mac_set = false;
  c.mac = {};
  make(c);
  const auto m1 = net_->mac();
  EXPECT_EQ(m1[0] & 0x01, 0) << "multicast bit set";
  EXPECT_EQ(m1[0] & 0x02, 0x02) << "not locally administered";
  EXPECT_EQ(read_config(0, 6), std::vector<uint8_t>(m1.begin(), m1.end()));
  // A second device gets another address (48 - 2 random bits: a collision means a broken RNG).
  t_.reset();
  net_.reset();
  dev_.reset();
  make(c);
  EXPECT_NE(net_->mac(), m1);
}

TEST_F(NetDeviceTest, FactoryRefusesBadConfigurations) {
  auto loop = std::move(EventLoop::create()).value();
  NetDeviceConfig c = base_config();
  c.mac = {0x01, 0, 0, 0, 0, 1};  // multicast
  auto r = make_net_device(c, *loop);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
  c = base_config();
  c.unix_path = dir_ + "/nobody-here";
  r = make_net_device(c, *loop);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(r.error().message.find("no datagram socket"), std::string::npos) << r.error().message;
  c.unix_path = std::string(200, 'x');
  r = make_net_device(c, *loop);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
  c = base_config();
  c.backend = NetDeviceConfig::Backend::kTap;
  c.tap_name = "bad/name";
  r = make_net_device(c, *loop);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
}

TEST_F(NetDeviceTest, LocalSocketPathIsClaimedOnceAndRemoved) {
  make(base_config());
  const std::string local = UnixDatagramBackend::local_path(peer_path_);
  EXPECT_EQ(::access(local.c_str(), F_OK), 0);
  // A second device on the same wire would steal the first one's frames: refused.
  auto loop = std::move(EventLoop::create()).value();
  auto second = make_net_device(base_config(), *loop);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("in use"), std::string::npos) << second.error().message;
  t_.reset();
  net_.reset();
  dev_.reset();
  EXPECT_NE(::access(local.c_str(), F_OK), 0) << "bound path left behind";
  // A stale socket file (a VMM that died) is replaced.
  int stale = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un a = addr(local);
  ASSERT_EQ(::bind(stale, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ::close(stale);
  make(base_config());
  init_driver();
  send_tx(test_frame(1));
  EXPECT_TRUE(peer_recv(1000).has_value());
}

TEST_F(NetDeviceTest, TxFramesReachThePeer) {
  make(base_config());
  init_driver();
  const Bytes a = test_frame(1, 60), b = test_frame(2, 1514), c = test_frame(3, 9000);
  send_tx(a);
  send_tx(b, /*one_desc=*/true);
  send_tx(c);
  EXPECT_EQ(tx_used(), 3);
  EXPECT_EQ(tx_.used(0).len, 0u);  // TX buffers are read-only
  EXPECT_EQ(peer_recv(1000), a);
  EXPECT_EQ(peer_recv(1000), b);
  EXPECT_EQ(peer_recv(1000), c);
  EXPECT_EQ(net_->counters().tx_frames, 3u);
  EXPECT_EQ(net_->counters().tx_bytes, 60u + 1514 + 9000);
}

TEST_F(NetDeviceTest, RxFramesReachTheGuest) {
  make(base_config());
  init_driver();
  post_rx(4);
  notify(0);
  const Bytes a = test_frame(10, 42), b = test_frame(11, 1514);
  peer_send(a);
  peer_send(b);
  notify(0);  // no event loop here: a notify makes the device look at the backend
  ASSERT_EQ(rx_used(), 2);
  EXPECT_EQ(rx_.used(0).len, kVnetHdrLen + 42);
  auto got = take_rx();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], a);
  EXPECT_EQ(got[1], b);
  EXPECT_EQ(net_->counters().rx_frames, 2u);
  EXPECT_EQ(net_->counters().rx_bytes, 42u + 1514);
}

TEST_F(NetDeviceTest, FrameSentBeforeBuffersIsHeldNotLost) {
  make(base_config());
  peer_send(test_frame(7));
  init_driver();  // DRIVER_OK: the device reads the frame and finds no buffer
  EXPECT_TRUE(net_->rx_waiting_for_buffers());
  post_rx(1);
  notify(0);
  auto got = take_rx();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(frame_seq(got[0]), 7u);
  EXPECT_FALSE(net_->rx_waiting_for_buffers());
}

TEST_F(NetDeviceTest, SecurityCheck16_OversizedAndRuntTxFramesAreDroppedAndCounted) {
  make(base_config());
  init_driver();
  send_tx(test_frame(1, kMaxFrameLen + 1));  // oversized
  send_tx(test_frame(2, 13));                // runt
  queue_tx_raw({}, true, 0);                 // no header at all
  notify(1);
  queue_tx_raw({}, true, 5);  // part of a header
  notify(1);
  send_tx({});  // a header and nothing else
  const Bytes biggest = test_frame(3, kMaxFrameLen), smallest = test_frame(4, kEthHeaderLen);
  send_tx(biggest);
  send_tx(smallest);
  EXPECT_EQ(tx_used(), 7) << "every chain is returned, dropped or not";
  const auto& c = net_->counters();
  EXPECT_EQ(c.tx_dropped_oversized, 1u);
  EXPECT_EQ(c.tx_dropped_runt, 2u);
  EXPECT_EQ(c.tx_dropped_bad_header, 2u);  // the empty chain and the 5-byte one
  EXPECT_EQ(c.tx_frames, 2u);
  EXPECT_EQ(t_->errors().bad_request, 2u);
  // Only the two legal frames reached the wire.
  EXPECT_EQ(peer_recv(1000), biggest);
  EXPECT_EQ(peer_recv(1000), smallest);
  EXPECT_FALSE(peer_recv(50).has_value());
}

TEST_F(NetDeviceTest, SecurityCheck16_OversizedAndRuntRxFramesAreDroppedAndCounted) {
  make(base_config());
  init_driver();
  post_rx(2, 4096);
  notify(0);
  peer_send(Bytes(13, 0x55));                  // runt
  peer_send(Bytes{});                          // empty datagram
  peer_send(test_frame(1, kMaxFrameLen + 1));  // oversized
  peer_send(test_frame(2, 3000));              // bigger than the guest's next buffer: dropped
  peer_send(test_frame(3, 100));               // fits
  notify(0);
  const auto& c = net_->counters();
  EXPECT_EQ(c.rx_dropped_runt, 2u);
  EXPECT_EQ(c.rx_dropped_oversized, 1u);
  EXPECT_EQ(c.rx_frames, 2u);  // 3000 fits a 4 KiB buffer
  auto got = take_rx();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(frame_seq(got[0]), 2u);
  EXPECT_EQ(frame_seq(got[1]), 3u);
  // A frame larger than the buffer (no MRG_RXBUF: one chain per frame) is dropped and the buffer
  // kept for the next frame.
  post_rx(1, kRxBufferLen);
  notify(0);
  peer_send(test_frame(4, 2000));
  peer_send(test_frame(5, 200));
  notify(0);
  EXPECT_EQ(c.rx_dropped_no_room, 1u);
  got = take_rx();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(frame_seq(got[0]), 5u);
}

TEST_F(NetDeviceTest, RxBufferTooSmallForTheHeaderIsReturnedEmpty) {
  make(base_config());
  init_driver();
  post_rx(1, 8);
  post_rx(1);
  notify(0);
  peer_send(test_frame(1));
  notify(0);
  auto got = take_rx();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].empty());
  EXPECT_EQ(frame_seq(got[1]), 1u);
  EXPECT_EQ(net_->counters().rx_bad_buffer, 1u);
  EXPECT_EQ(t_->errors().bad_request, 1u);
}

std::vector<EgressRule> rules(std::initializer_list<const char*> texts) {
  std::vector<EgressRule> out;
  for (const char* t : texts)
    out.push_back(std::move(parse_egress_rule(t)).value());
  return out;
}

TEST_F(NetDeviceTest, EgressPolicyDeniedFramesNeverReachThePeer) {
  NetDeviceConfig c = base_config();
  c.egress_policy = true;
  c.allow = rules({"10.0.0.0/8:tcp:443", "2001:db8::/32:udp:53"});
  make(c);
  init_driver();
  const Bytes allowed4 = ipv4(kTcp, v4("10.9.8.7"), tcp(443));
  const Bytes allowed6 = ipv6(kUdp, v6("2001:db8::53"), udp(53));
  const Bytes arp = eth(0x0806, arp_body());
  send_tx(ipv4(kTcp, v4("10.9.8.7"), tcp(80)));  // wrong port
  send_tx(allowed4);
  send_tx(ipv4(kTcp, v4("192.168.1.1"), tcp(443)));  // wrong prefix
  send_tx(arp);
  send_tx(ipv4(kUdp, v4("255.255.255.255"), udp(67)));  // DHCP not named
  send_tx(test_frame(1));                               // other ethertype
  send_tx(allowed6);
  send_tx(eth(0x8100, Bytes(60, 0)));  // VLAN
  send_tx(ipv6(kRouting, v6("2001:db8::53"), cat(routing(kUdp, 1), udp(53))));
  send_tx(ipv4(kTcp, v4("10.0.0.1"), Bytes(40, 0), 0x0004));  // fragment tail
  Bytes bad = allowed4;
  bad[14] = 0x4f;  // IHL past the packet
  send_tx(bad);
  EXPECT_EQ(tx_used(), 11);
  EXPECT_EQ(peer_recv(1000), allowed4);
  EXPECT_EQ(peer_recv(1000), arp);
  EXPECT_EQ(peer_recv(1000), allowed6);
  EXPECT_FALSE(peer_recv(50).has_value()) << "a denied frame reached the wire";
  const auto& k = net_->counters();
  auto denied = [&](EgressVerdict v) { return k.tx_dropped_policy[static_cast<size_t>(v)].load(); };
  EXPECT_EQ(denied(EgressVerdict::kDenyNoRule), 3u);
  EXPECT_EQ(denied(EgressVerdict::kDenyEthertype), 1u);
  EXPECT_EQ(denied(EgressVerdict::kDenyVlan), 1u);
  EXPECT_EQ(denied(EgressVerdict::kDenyExtensionHeader), 1u);
  EXPECT_EQ(denied(EgressVerdict::kDenyFragment), 1u);
  EXPECT_EQ(denied(EgressVerdict::kDenyMalformed), 1u);
  EXPECT_EQ(k.tx_dropped_policy_total(), 8u);
  EXPECT_EQ(k.tx_frames, 3u);
}

TEST_F(NetDeviceTest, EgressPolicyDoesNotApplyToRx) {
  NetDeviceConfig c = base_config();
  c.egress_policy = true;  // no rules: the guest may send only ARP/NDP
  make(c);
  init_driver();
  post_rx(1);
  notify(0);
  const Bytes inbound = ipv4(kTcp, v4("10.0.2.15"), tcp(22));
  peer_send(inbound);
  notify(0);
  auto got = take_rx();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], inbound);
}

TEST_F(NetDeviceTest, WithoutAPolicyEverythingLegalPasses) {
  make(base_config());
  init_driver();
  const Bytes vlan = eth(0x8100, Bytes(60, 0));
  const Bytes odd = test_frame(5);
  send_tx(vlan);
  send_tx(odd);
  EXPECT_EQ(peer_recv(1000), vlan);
  EXPECT_EQ(peer_recv(1000), odd);
  EXPECT_EQ(net_->counters().tx_dropped_policy_total(), 0u);
}

}  // namespace
}  // namespace carapace::net::test
