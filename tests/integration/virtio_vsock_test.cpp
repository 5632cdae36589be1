// virtio-vsock through the test guest's driver and the VMM's Unix-socket host side (Firecracker's
// hybrid design, vmm/devices/vsock/vsock_device.h): the host connects to the uds and asks for a
// guest port with "CONNECT <port>\n"; the guest connects to host port P, which the VMM forwards to
// a listener at <uds>_P.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <thread>

#include "tests/integration/virtio_test_support.h"

namespace carapace::testing {
namespace {

int unix_stream(const std::string& path, bool listen_there) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  int rc = listen_there ? bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a)
                        : connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  if (rc == 0 && listen_there) rc = listen(fd, 4);
  if (rc != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Reads until `n` bytes, EOF, or `timeout_ms` of silence.
std::string read_some(int fd, size_t n, int timeout_ms) {
  std::string got;
  char buf[65536];
  while (got.size() < n) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) break;
    ssize_t r = read(fd, buf, std::min(sizeof buf, n - got.size()));
    if (r <= 0) break;
    got.append(buf, static_cast<size_t>(r));
  }
  return got;
}

std::string read_line(int fd, int timeout_ms) {
  std::string line;
  while (line.empty() || line.back() != '\n') {
    std::string c = read_some(fd, 1, timeout_ms);
    if (c.empty()) break;
    line += c;
  }
  return line;
}

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
  int fd = unix_stream(uds, false);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_EQ(write(fd, "CONNECT 1234\n", 13), 13);
  const std::string ok = read_line(fd, 10000);
  EXPECT_EQ(ok.rfind("OK ", 0), 0u) << ok;
  // 200 KiB: more than the guest's 64 KiB receive buffer, so credit updates must flow. A writer
  // thread, since the echo comes back while we send.
  std::string data;
  for (int i = 0; data.size() < 200 * 1024; ++i)
    data += "line " + std::to_string(i) + " of the vsock echo test\n";
  std::thread writer([&] {
    size_t off = 0;
    while (off < data.size()) {
      ssize_t w = write(fd, data.data() + off, std::min<size_t>(8192, data.size() - off));
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    shutdown(fd, SHUT_WR);
  });
  const std::string echoed = read_some(fd, data.size() + 1, 10000);
  writer.join();
  close(fd);
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
  int listener = unix_stream(uds + "_5678", true);
  ASSERT_GE(listener, 0) << strerror(errno);
  std::string greeting, rest;
  std::thread host([&] {
    pollfd p{listener, POLLIN, 0};
    if (poll(&p, 1, 30000) <= 0) return;
    int c = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return;
    greeting = read_line(c, 10000);
    (void)!write(c, "hello from host\n", 16);
    rest = read_some(c, 1, 10000);  // EOF once the guest closes
    close(c);
  });
  auto r = run_virtio("vsock", "testguest.vsock.connect=5678", {"--vsock", "cid=7,uds=" + uds});
  host.join();
  close(listener);
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
