// The hostile scenario: the test guest breaks the virtio transport, ring and device rules on
// every device at once (guest/testguest/scenarios/hostile.cpp). The guest checks the VMM's answers
// and that every device still works; here the VMM must exit 0, log the guest's mistakes as
// warnings (not errors), and no host-side effect may leak: the disk images are unchanged and no
// malformed frame reaches the network peer.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <atomic>
#include <thread>

#include "tests/integration/unix_sockets.h"
#include "tests/integration/virtio_test_support.h"

namespace carapace::testing {
namespace {

ProcessResult expect_hostile_pass(const std::vector<std::string>& flags) {
  auto r = run_virtio("hostile", "", flags);
  EXPECT_TRUE(passed(r, "hostile"));
  EXPECT_EQ(r.term_signal, 0) << describe(r);
  EXPECT_NE(r.err.find("warn"), std::string::npos) << "guest errors are reported: " << describe(r);
  EXPECT_NE(r.err.find("needs reset"), std::string::npos) << describe(r);
  EXPECT_EQ(r.err.find("error"), std::string::npos) << describe(r);
  EXPECT_EQ(r.err.find("AddressSanitizer"), std::string::npos) << describe(r);
  EXPECT_EQ(r.err.find("runtime error"), std::string::npos) << describe(r);
  return r;
}

TEST(VirtioHostileKvm, RngAlone) {
  ASSERT_TRUE(kvm_usable());
  auto r = expect_hostile_pass({"--rng"});
  EXPECT_NE(r.out.find("testguest: hostile rng0 survived"), std::string::npos) << describe(r);
}

TEST(VirtioHostileKvm, EveryDeviceAtOnce) {
  ASSERT_TRUE(kvm_usable());
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string rw = dir.file("rw.img"), ro = dir.file("ro.img"), net = dir.file("net.sock");
  ASSERT_TRUE(write_pattern_image(rw, 1 << 20));
  ASSERT_TRUE(write_pattern_image(ro, 1 << 20));
  UniqueFd peer = unix_socket(SOCK_DGRAM, net, SocketEnd::kBind);
  ASSERT_TRUE(peer.valid());
  // The peer reads while the guest runs: a datagram peer holds only a few frames, and a full one
  // makes the device hold TX back (flow control) until it drains. Only whole Ethernet frames may
  // reach it: runts and oversized frames are dropped by the device.
  std::atomic<bool> stop{false};
  std::atomic<int> frames{0}, runts{0}, oversized{0};
  std::thread reader([&] {
    char buf[70000];
    while (!stop.load()) {
      pollfd p{peer.get(), POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      ssize_t n = recv(peer.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n <= 0) continue;
      ++frames;
      if (n < 14) ++runts;
      if (n > 1514 + 4) ++oversized;
    }
  });
  auto r =
      expect_hostile_pass({"--rng", "--drive", "path=" + rw, "--drive", "path=" + ro + ",ro=on",
                           "--net", "unix=" + net, "--vsock", "cid=3,uds=" + dir.file("v.sock")});
  stop.store(true);
  reader.join();
  peer.reset();
  for (const char* name : {"rng0", "blk0", "blk1", "net0", "vsock0"})
    EXPECT_NE(r.out.find(std::string("testguest: hostile ") + name + " survived"),
              std::string::npos)
        << name << "\n"
        << describe(r);
  EXPECT_EQ(first_mismatch(read_words(rw), blk_image_word), -1) << "the writable image changed";
  EXPECT_EQ(first_mismatch(read_words(ro), blk_image_word), -1) << "the read-only image changed";
  EXPECT_EQ(runts.load(), 0) << "runt frame reached the host";
  EXPECT_EQ(oversized.load(), 0) << "oversized frame reached the host";
  EXPECT_GT(frames.load(), 0) << "the probes' frames arrive";
}

}  // namespace
}  // namespace carapace::testing
