// virtio-net through the test guest's driver with the Unix datagram backend: the test binds the
// peer socket, the VMM binds <peer>.vm next to it; one datagram is one Ethernet frame
// (vmm/devices/net/unix_backend.h). The guest sends a fixed list of frames, then echoes what the
// host sends; with an egress policy only the allowed frames may reach the host.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <optional>
#include <thread>

#include "tests/integration/unix_sockets.h"
#include "tests/integration/virtio_test_support.h"

namespace carapace::testing {
namespace {

class PeerSocket {
 public:
  explicit PeerSocket(const std::string& path)
      : path_(path), fd_(unix_socket(SOCK_DGRAM, path, SocketEnd::kBind)) {}
  bool ok() const { return fd_.valid(); }
  // The next frame, or an empty string after `timeout_ms`.
  std::string receive(int timeout_ms) {
    pollfd p{fd_.get(), POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return {};
    char buf[70000];
    ssize_t n = recv(fd_.get(), buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  }
  bool send_to_vm(const std::string& frame) {
    sockaddr_un a = unix_address(path_ + ".vm");
    return sendto(fd_.get(), frame.data(), frame.size(), 0, reinterpret_cast<sockaddr*>(&a),
                  sizeof a) == static_cast<ssize_t>(frame.size());
  }

 private:
  std::string path_;
  UniqueFd fd_;
};

// The net scenario's VM and its datagram peer, in a fresh folder.
class VirtioNetKvm : public ::testing::Test {
 protected:
  // Binds the peer, starts the scenario with `words` and `--net unix=<peer><net_options>`, and
  // waits until the guest prints `ready`.
  void start_vm(const std::string& words, const std::string& net_options,
                const std::string& ready) {
    ASSERT_TRUE(kvm_usable());
    ASSERT_TRUE(dir_.ok());
    const std::string sock = dir_.file("net.sock");
    peer_.emplace(sock);
    ASSERT_TRUE(peer_->ok());
    vm_.emplace(virtio_argv("net", words, {"--net", "unix=" + sock + net_options}));
    ASSERT_TRUE(vm_->started());
    ASSERT_TRUE(vm_->wait_for_output(ready, std::chrono::seconds(30))) << vm_->out() << vm_->err();
  }

  TempDir dir_;
  std::optional<PeerSocket> peer_;
  std::optional<RunningProcess> vm_;
};

std::vector<std::string> receive_all(PeerSocket& peer, int first_timeout_ms) {
  std::vector<std::string> frames;
  int timeout = first_timeout_ms;
  for (std::string f; !(f = peer.receive(timeout)).empty(); timeout = 200)
    frames.push_back(f);
  return frames;
}

bool contains(const std::string& frame, const std::string& text) {
  return frame.find(text) != std::string::npos;
}

uint16_t ethertype(const std::string& f) {
  return f.size() < 14 ? 0 : static_cast<uint16_t>((uint8_t(f[12]) << 8) | uint8_t(f[13]));
}

// An IPv4/UDP frame from the host side (10.0.2.2:9999 -> dst:port), addressed to the guest.
std::string udp_frame(uint8_t dst_last, uint16_t port, const std::string& text) {
  std::string f(14, '\0');
  for (int i = 0; i < 6; ++i)
    f[i] = '\xff';
  f[6] = 0x02;
  f[11] = 0x09;
  f[12] = 0x08;
  uint8_t ip[20] = {0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 2, 2, 10, 0, 2, dst_last};
  const uint16_t total = static_cast<uint16_t>(20 + 8 + text.size());
  ip[2] = static_cast<uint8_t>(total >> 8);
  ip[3] = static_cast<uint8_t>(total);
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2)
    sum += (ip[i] << 8) | ip[i + 1];
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  ip[10] = static_cast<uint8_t>(~sum >> 8);
  ip[11] = static_cast<uint8_t>(~sum);
  f.append(reinterpret_cast<char*>(ip), 20);
  const uint16_t len = static_cast<uint16_t>(8 + text.size());
  const char udp[8] = {'\x27',
                       '\x0f',
                       static_cast<char>(port >> 8),
                       static_cast<char>(port),
                       static_cast<char>(len >> 8),
                       static_cast<char>(len),
                       0,
                       0};
  f.append(udp, 8);
  f += text;
  if (f.size() < 60) f.resize(60, '\0');
  return f;
}

TEST_F(VirtioNetKvm, GuestSendsFramesAndEchoes) {
  ASSERT_NO_FATAL_FAILURE(start_vm("testguest.net.echo=3", "", "testguest: net echo ready"));
  auto sent = receive_all(*peer_, 5000);
  ASSERT_EQ(sent.size(), 8u) << vm_->out() << vm_->err();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ethertype(sent[i]), 0x88b5);
    EXPECT_TRUE(contains(sent[i], "testguest raw frame " + std::to_string(i)));
  }
  EXPECT_EQ(ethertype(sent[3]), 0x0806) << "ARP request";
  EXPECT_TRUE(contains(sent[4], "testguest udp allowed"));
  EXPECT_TRUE(contains(sent[5], "testguest udp denied-addr"));
  EXPECT_TRUE(contains(sent[6], "testguest udp denied-port"));
  EXPECT_TRUE(contains(sent[7], "testguest tcp denied-proto"));
  for (const auto& f : sent)
    EXPECT_EQ(uint8_t(f[6]) & 0x03, 0x02) << "source: the guest's locally administered MAC";

  std::vector<std::string> to_guest = {udp_frame(15, 1000, "echo me 0"), std::string(1514, 'x'),
                                       udp_frame(15, 1001, "echo me 2")};
  to_guest[1].replace(0, 14, to_guest[0].substr(0, 12) + "\x88\xb5");
  for (const auto& f : to_guest)
    ASSERT_TRUE(peer_->send_to_vm(f)) << strerror(errno);
  auto echoed = receive_all(*peer_, 10000);
  auto r = vm_->finish();
  EXPECT_TRUE(passed(r, "net"));
  ASSERT_EQ(echoed.size(), 3u) << describe(r);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(echoed[i], to_guest[i]) << "frame " << i;
}

// allow=10.0.2.2/32:udp:9999: ARP and the allowed datagram pass; raw frames, the other
// destinations, ports and protocols never reach the host socket; echoes are filtered the same way.
TEST_F(VirtioNetKvm, EgressPolicyDropsDeniedFrames) {
  ASSERT_NO_FATAL_FAILURE(
      start_vm("testguest.net.echo=2", ",allow=10.0.2.2/32:udp:9999", "testguest: net echo ready"));
  // The guest echoes frames unchanged: one to 10.0.2.2:9999 is allowed out, one to port 8888 not.
  std::string allowed = udp_frame(2, 9999, "echo allowed");
  std::string denied = udp_frame(2, 8888, "echo denied");
  ASSERT_TRUE(peer_->send_to_vm(allowed));
  ASSERT_TRUE(peer_->send_to_vm(denied));
  auto r = vm_->finish();
  EXPECT_TRUE(passed(r, "net"));
  auto frames = receive_all(*peer_, 1000);
  ASSERT_EQ(frames.size(), 3u) << describe(r);
  EXPECT_EQ(ethertype(frames[0]), 0x0806) << "ARP passes a policy";
  EXPECT_TRUE(contains(frames[1], "testguest udp allowed"));
  EXPECT_EQ(frames[2], allowed);
  for (const auto& f : frames) {
    EXPECT_FALSE(contains(f, "denied")) << describe(r);
    EXPECT_FALSE(contains(f, "raw frame")) << describe(r);
  }
}

// docs/security.md #16: the host floods the guest while its receive ring is full; once the guest
// drains, RX resumes and every frame arrives in order: a connected Unix datagram sender blocks
// while the VMM does not read, so a device that stops reading when the ring is full loses nothing.
TEST_F(VirtioNetKvm, FloodWhileRingFullResumes) {
  constexpr int kFrames = 300;
  ASSERT_NO_FATAL_FAILURE(
      start_vm("testguest.net.sink=" + std::to_string(kFrames), "", "testguest: net sink ready"));
  std::thread flood([&] {
    for (int i = 0; i < kFrames; ++i) {
      std::string f = std::string(12, '\xff') + "\x88\xb5" + std::string(46, 'f');
      f[14] = static_cast<char>(i >> 24);
      f[15] = static_cast<char>(i >> 16);
      f[16] = static_cast<char>(i >> 8);
      f[17] = static_cast<char>(i);
      if (!peer_->send_to_vm(f)) break;
    }
  });
  auto r = vm_->finish();
  flood.join();
  EXPECT_TRUE(passed(r, "net"));
  EXPECT_TRUE(has_line(r.out, "testguest: net sink received 300 of 300 frames")) << describe(r);
}

TEST_F(VirtioNetKvm, MissingDeviceFailsInGuest) {
  ASSERT_TRUE(kvm_usable());
  auto r = run_virtio("net", "", {});
  EXPECT_TRUE(has_line(r.out, "TESTGUEST FAIL net: no virtio-net device (run with --net)"))
      << describe(r);
}

}  // namespace
}  // namespace carapace::testing
