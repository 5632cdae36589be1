// virtio-net over a real TAP interface. Needs root and /dev/net/tun; a host without them FAILS
// (the brief: never skip). The interface cptest0 is created with `ip tuntap`, brought up, watched
// from the host side with an AF_PACKET socket, and deleted afterwards.
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "tests/unit/devices/net/net_fixture.h"

namespace carapace::net::test {
namespace {

constexpr const char* kTap = "cptest0";
constexpr uint16_t kTestEtherType = 0x88b5;  // IEEE local experimental

int sh(const std::string& cmd) {
  return std::system((cmd + " >/dev/null 2>&1").c_str());
}

class TapTest : public NetFixture {
 protected:
  void SetUp() override {
    NetFixture::SetUp();
    struct stat st;
    ASSERT_EQ(::stat("/dev/net/tun", &st), 0)
        << "/dev/net/tun is missing: this host cannot run the TAP backend test (load the tun "
           "module or run on a host with TUN/TAP)";
    ASSERT_EQ(::geteuid(), 0u) << "the TAP test must run as root (it creates " << kTap << ")";
    (void)sh(std::string("ip link del ") + kTap);  // left over from a crashed run
    ASSERT_EQ(sh(std::string("ip tuntap add dev ") + kTap + " mode tap"), 0)
        << "ip tuntap add dev " << kTap << " mode tap failed";
    created_ = true;
    // No IPv6 autoconfiguration chatter from the host on the test link.
    std::ofstream(std::string("/proc/sys/net/ipv6/conf/") + kTap + "/disable_ipv6") << "1\n";
    ASSERT_EQ(sh(std::string("ip link set ") + kTap + " up"), 0);
    ifindex_ = static_cast<int>(::if_nametoindex(kTap));
    ASSERT_GT(ifindex_, 0);
    packet_ = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(kTestEtherType));
    ASSERT_GE(packet_, 0) << std::strerror(errno);
    sockaddr_ll ll{};
    ll.sll_family = AF_PACKET;
    ll.sll_protocol = htons(kTestEtherType);
    ll.sll_ifindex = ifindex_;
    ASSERT_EQ(::bind(packet_, reinterpret_cast<sockaddr*>(&ll), sizeof ll), 0);
  }
  void TearDown() override {
    t_.reset();
    net_.reset();
    dev_.reset();  // closes the TAP fd
    if (packet_ >= 0) ::close(packet_);
    if (created_) {
      EXPECT_EQ(sh(std::string("ip link del ") + kTap), 0);
    }
    NetFixture::TearDown();
  }

  NetDeviceConfig tap_config() const {
    NetDeviceConfig c = base_config();
    c.backend = NetDeviceConfig::Backend::kTap;
    c.tap_name = kTap;
    c.unix_path.clear();
    return c;
  }

  // The next test-ethertype frame seen on the host side of the TAP interface.
  std::optional<Bytes> host_recv(int ms) { return recv_frame(packet_, ms); }
  // The host transmits `frame` on the interface: it comes out of the TAP fd.
  void host_send(const Bytes& frame) {
    sockaddr_ll ll{};
    ll.sll_family = AF_PACKET;
    ll.sll_ifindex = ifindex_;
    ll.sll_halen = 6;
    std::memcpy(ll.sll_addr, frame.data(), 6);
    ASSERT_EQ(::sendto(packet_, frame.data(), frame.size(), 0, reinterpret_cast<sockaddr*>(&ll),
                       sizeof ll),
              static_cast<ssize_t>(frame.size()))
        << std::strerror(errno);
  }

  bool created_ = false;
  int ifindex_ = 0;
  int packet_ = -1;
};

Bytes tap_frame(uint32_t seq, size_t len, const std::array<uint8_t, 6>& dst) {
  Bytes f = test_frame(seq, len);
  std::memcpy(f.data(), dst.data(), 6);
  f[12] = kTestEtherType >> 8;
  f[13] = kTestEtherType & 0xff;
  return f;
}

TEST_F(TapTest, FramesCrossARealTapInterfaceAndThePolicyApplies) {
  make(tap_config(), /*with_loop=*/true);
  init_driver();
  post_rx(8);
  notify(0);

  // Guest → host: what the guest transmits is received on cptest0, byte for byte.
  const Bytes out = tap_frame(1, 1000, {0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee});
  send_tx(out);
  auto seen = host_recv(2000);
  ASSERT_TRUE(seen.has_value()) << "the guest's frame never appeared on " << kTap;
  EXPECT_EQ(*seen, out);
  EXPECT_TRUE(
      wait_until([&] { return net_->counters().tx_frames == 1; }));  // counted after the send

  // Host → guest: a frame the host sends on cptest0 lands in a guest RX buffer.
  // The kernel attaches the interface's queueing discipline when the TAP fd brings the carrier
  // up, asynchronously (linkwatch); until then the host's frames are dropped. Wait for it.
  EXPECT_TRUE(wait_until([] {
    std::string state;
    std::ifstream(std::string("/sys/class/net/") + kTap + "/operstate") >> state;
    return state == "up";
  })) << kTap
      << " never came up";
  const Bytes in = tap_frame(2, 600, net_->mac());
  host_send(in);
  bool found = false;
  ASSERT_TRUE(wait_until([&] {
    for (auto& f : take_rx())
      if (f == in) found = true;
    return found;
  })) << "the host's frame never reached the guest (rx_frames "
      << net_->counters().rx_frames << ", backend wakeups " << net_->counters().backend_wakeups
      << ")";
  EXPECT_GE(net_->counters().rx_frames, 1u);
  EXPECT_EQ(net_->counters().rx_dropped_invalid, 0u);

  // The egress policy applies on TAP too. (One test, not two: parallel ctest runs must not
  // fight over cptest0.)
  t_.reset();
  net_.reset();
  dev_.reset();
  NetDeviceConfig c = tap_config();
  c.egress_policy = true;  // nothing allowed but ARP and link NDP
  make(c);
  init_driver();
  send_tx(tap_frame(3, 100, {0x02, 0, 0, 0, 0, 1}));
  EXPECT_FALSE(host_recv(200).has_value()) << "a denied frame reached the TAP interface";
  EXPECT_EQ(net_->counters().tx_dropped_policy[size_t(EgressVerdict::kDenyEthertype)], 1u);
}

}  // namespace
}  // namespace carapace::net::test
