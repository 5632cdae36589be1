// virtio-vsock through the test guest's driver and the VMM's Unix-socket host side (Firecracker's
// hybrid design, vmm/devices/vsock/vsock_device.h): the host connects to the uds and asks for a
// guest port with "CONNECT <port>\n"; the guest connects to host port P, which the VMM forwards to
// a listener at <uds>_P.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <thread>

#include "tests/integration/unix_sockets.h"
#include "tests/integration/virtio_test_support.h"

namespace carapace::testing {
namespace {

TEST(VirtioVsockKvm, HostConnectsAndGuestEchoes) {
  ASSERT_TRUE(kvm_usable());
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string uds = dir.file("v.sock");
  RunningProcess vm(
      virtio_argv("vsock", "testguest.vsock.port=1234", {"--vsock", "cid=3,uds=" + uds}));
  ASSERT_TRUE(vm.started());
  ASSERT_TRUE(
      vm.wait_for_output("testguest: vsock listening on port 1234", std::chrono::seconds(30)))
      << vm.out() << vm.err();
  UniqueFd fd = unix_socket(SOCK_STREAM, uds, SocketEnd::kConnect);
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  ASSERT_EQ(write(fd.get(), "CONNECT 1234\n", 13), 13);
  const std::string ok = read_line(fd.get(), 10000);
  EXPECT_EQ(ok.rfind("OK ", 0), 0u) << ok;
  // 200 KiB: more than the guest's 64 KiB receive buffer, so credit updates must flow. A writer
  // thread, since the echo comes back while we send.
  std::string data;
  for (int i = 0; data.size() < 200 * 1024; ++i)
    data += "line " + std::to_string(i) + " of the vsock echo test\n";
  std::thread writer([&] {
    size_t off = 0;
    while (off < data.size()) {
      ssize_t w = write(fd.get(), data.data() + off, std::min<size_t>(8192, data.size() - off));
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    shutdown(fd.get(), SHUT_WR);
  });
  const std::string echoed = read_some(fd.get(), data.size() + 1, 10000);
  writer.join();
  fd.reset();
  auto r = vm.finish();
  EXPECT_TRUE(passed(r, "vsock"));
  EXPECT_EQ(echoed.size(), data.size()) << describe(r);
  EXPECT_TRUE(echoed == data) << "echo differs";
  EXPECT_NE(r.out.find("testguest: vsock echoed " + std::to_string(data.size())), std::string::npos)
      << describe(r);
}

TEST(VirtioVsockKvm, GuestConnectsToHostListener) {
  ASSERT_TRUE(kvm_usable());
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string uds = dir.file("v.sock");
  UniqueFd listener = unix_socket(SOCK_STREAM, uds + "_5678", SocketEnd::kListen);
  ASSERT_TRUE(listener.valid()) << strerror(errno);
  std::string greeting, rest;
  std::thread host([&] {
    pollfd p{listener.get(), POLLIN, 0};
    if (poll(&p, 1, 30000) <= 0) return;
    UniqueFd c(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!c.valid()) return;
    greeting = read_line(c.get(), 10000);
    (void)!write(c.get(), "hello from host\n", 16);
    rest = read_some(c.get(), 1, 10000);  // EOF once the guest closes
  });
  auto r = run_virtio("vsock", "testguest.vsock.connect=5678", {"--vsock", "cid=7,uds=" + uds});
  host.join();
  listener.reset();
  EXPECT_TRUE(passed(r, "vsock"));
  EXPECT_EQ(greeting, "hello from guest cid 7\n") << describe(r);
  EXPECT_EQ(rest, "") << "nothing after the greeting, then EOF";
  EXPECT_NE(r.out.find("testguest: vsock guest cid 7,"), std::string::npos) << describe(r);
}

TEST(VirtioVsockKvm, ConnectionToClosedHostPortIsRefused) {
  ASSERT_TRUE(kvm_usable());
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  auto r = run_virtio("vsock", "testguest.vsock.connect=5679",
                      {"--vsock", "cid=3,uds=" + dir.file("v.sock")});
  EXPECT_NE(r.out.find("TESTGUEST FAIL vsock: the host refused the connection"), std::string::npos)
      << describe(r);
  EXPECT_EQ(r.exit_code, 0) << describe(r);
}

}  // namespace
}  // namespace carapace::testing
