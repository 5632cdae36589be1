// Test fixture for virtio-vsock: a device bound in a fresh temporary directory, a fake driver
// (FakeVsockGuest) and host-side socket helpers. The event loop is created but not run: the
// tests call service_host_sockets() where the loop would run the handlers, so every step is
// deterministic (one test runs the real loop thread).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "tests/unit/devices/vsock/fake_vsock_guest.h"
#include "tests/unit/devices/vsock/host_sockets.h"

namespace carapace::vsock::fake {

class VsockTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kCid = 42;

  void SetUp() override {
    char tmpl[] = "/tmp/vsock-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/v.sock";
    loop_ = std::move(EventLoop::create()).value();
  }
  void TearDown() override {
    listener_.reset();
    dev_.reset();
    loop_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void make_device(const VsockOptions& opts = {}) {
    auto d = VirtioVsock::create(kCid, path_, *loop_, opts);
    ASSERT_TRUE(d.ok()) << d.error().describe();
    dev_ = std::move(d).value();
  }
  void start(const VsockOptions& opts = {}) {
    make_device(opts);
    ASSERT_TRUE(guest_.activate(*dev_).ok());
  }
  // What the event loop would do, then collect rx.
  void service() {
    dev_->service_host_sockets();
    guest_.poll_rx();
  }
  // The next packet to the guest (servicing the host side while waiting for it).
  Packet expect_packet() {
    for (int i = 0; i < 100 && guest_.inbox.empty(); ++i) {
      service();
      if (guest_.inbox.empty()) ::usleep(1000);
    }
    if (guest_.inbox.empty()) {
      ADD_FAILURE() << "no packet for the guest";
      return {};
    }
    Packet p = std::move(guest_.inbox.front());
    guest_.inbox.pop_front();
    return p;
  }
  // Waits up to `tries` rounds of `pause` for a packet with `op`, dropping the others. With
  // `service_host` it does the event loop's work too; a test whose loop thread runs must not.
  Packet wait_for_op(uint16_t op, int tries, std::chrono::microseconds pause, bool service_host) {
    Packet p;
    for (int i = 0; i < tries && p.hdr.op != op; ++i) {
      if (service_host) {
        service();
      } else {
        guest_.poll_rx();
      }
      if (!guest_.inbox.empty()) {
        p = guest_.inbox.front();
        guest_.inbox.pop_front();
      } else {
        std::this_thread::sleep_for(pause);
      }
    }
    return p;
  }
  bool no_packet() {
    service();
    return guest_.inbox.empty();
  }
  std::string port_path(uint32_t port) const { return path_ + "_" + std::to_string(port); }

  struct HostConn {
    UniqueFd fd;
    uint32_t host_port = 0;
    uint32_t guest_port = 0;
  };
  // Host-initiated: CONNECT, the REQUEST, the guest's RESPONSE and the "OK" line.
  HostConn open_from_host(uint32_t guest_port) {
    HostConn c;
    c.guest_port = guest_port;
    c.fd = unix_connect(path_);
    EXPECT_TRUE(c.fd.valid());
    send_all(c.fd.get(), "CONNECT " + std::to_string(guest_port) + "\n");
    Packet req = expect_packet();
    EXPECT_EQ(req.hdr.op, kOpRequest);
    EXPECT_EQ(req.hdr.dst_port, guest_port);
    c.host_port = req.hdr.src_port;
    guest_.send(guest_.hdr(kOpResponse, guest_port, c.host_port));
    EXPECT_EQ(read_some(c.fd.get(), 64), "OK " + std::to_string(c.host_port) + "\n");
    return c;
  }
  // Guest-initiated to a host listener at port_path(host_port): REQUEST, RESPONSE, accept.
  HostConn open_from_guest(int listener, uint32_t host_port, uint32_t guest_port) {
    HostConn c;
    c.host_port = host_port;
    c.guest_port = guest_port;
    guest_.send(guest_.hdr(kOpRequest, guest_port, host_port));
    Packet resp = expect_packet();
    EXPECT_EQ(resp.hdr.op, kOpResponse);
    EXPECT_EQ(resp.hdr.dst_port, guest_port);
    c.fd = UniqueFd(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
    EXPECT_TRUE(c.fd.valid());
    return c;
  }
  // The usual start of a guest-initiated test: the device started with `opts`, a host listener
  // for port 5000 (listener_) and guest port 1234 connected to it.
  HostConn start_connected(const VsockOptions& opts = {}) {
    start(opts);
    listener_ = unix_listen(port_path(5000));
    return open_from_guest(listener_.get(), 5000, 1234);
  }
  // Guest → host data on `c`.
  void guest_write(const HostConn& c, std::string_view data) {
    auto bytes = bytes_of(data);
    EXPECT_TRUE(guest_.send(
        guest_.hdr(kOpRw, c.guest_port, c.host_port, static_cast<uint32_t>(bytes.size())), bytes));
  }

  std::string dir_, path_;
  std::unique_ptr<EventLoop> loop_;
  GuestMemory mem_ = make_vsock_memory();
  FakeVsockGuest guest_{mem_, kCid};
  std::shared_ptr<VirtioVsock> dev_;
  UniqueFd listener_;  // start_connected()'s host listener
};

}  // namespace carapace::vsock::fake
