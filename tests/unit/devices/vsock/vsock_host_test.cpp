// Host-initiated connections: "CONNECT <port>\n" on the device's Unix socket, the REQUEST /
// RESPONSE handshake, the "OK <port>\n" line, data both ways; refusals, malformed lines and
// timeouts close the Unix connection. Also the exact handshake of AgentClient::connect_vsock_uds
// and the real event loop.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/agent/agent_client.h"
#include "tests/unit/devices/vsock/vsock_fixture.h"
#include "vmm/virtio/mmio_transport.h"

namespace carapace::vsock::fake {
namespace {

TEST_F(VsockTest, DeviceIdentityAndConfigSpace) {
  make_device();
  EXPECT_EQ(dev_->device_type(), 19u);
  ASSERT_EQ(dev_->queue_max_sizes().size(), 3u);
  EXPECT_EQ(dev_->device_features(), kFeatureStream);
  uint8_t cfg[8] = {};
  dev_->read_config(0, cfg);
  uint64_t cid;
  std::memcpy(&cid, cfg, 8);
  EXPECT_EQ(cid, kCid);
  uint8_t hi[4] = {1, 1, 1, 1};
  dev_->read_config(4, {hi, 4});  // the upper half on its own
  EXPECT_EQ(hi[0], 0);
  uint8_t w[8] = {9, 9, 9, 9, 9, 9, 9, 9};
  dev_->write_config(0, w);  // read-only
  dev_->read_config(0, cfg);
  std::memcpy(&cid, cfg, 8);
  EXPECT_EQ(cid, kCid);
}

TEST_F(VsockTest, PathInUseIsInvalidInput) {
  make_device();
  auto again = VirtioVsock::create(kCid, path_, *loop_);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().kind, ErrorKind::kInvalidInput);
  EXPECT_FALSE(VirtioVsock::create(2, dir_ + "/other", *loop_).ok());  // CID of the host
}

TEST_F(VsockTest, SocketFileRemovedWithTheDevice) {
  make_device();
  EXPECT_TRUE(std::filesystem::exists(path_));
  dev_.reset();
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(VsockTest, HostConnectHandshakeThenDataBothWays) {
  start();
  HostConn c;
  c.fd = unix_connect(path_);
  ASSERT_TRUE(c.fd.valid());
  send_all(c.fd.get(), "CONNECT 52\n");
  Packet req = expect_packet();
  EXPECT_EQ(req.hdr.op, kOpRequest);
  EXPECT_EQ(req.hdr.src_cid, kHostCid);
  EXPECT_EQ(req.hdr.dst_cid, kCid);
  EXPECT_EQ(req.hdr.dst_port, 52u);
  EXPECT_GE(req.hdr.src_port, VirtioVsock::kFirstLocalPort);
  EXPECT_EQ(req.hdr.type, kTypeStream);
  EXPECT_EQ(req.hdr.buf_alloc, VsockOptions{}.buf_alloc);
  EXPECT_EQ(req.used_len, kHeaderSize);
  // No "OK" before the guest answers.
  EXPECT_EQ(read_some(c.fd.get(), 64, 50), "");

  guest_.send(guest_.hdr(kOpResponse, 52, req.hdr.src_port));
  EXPECT_EQ(read_some(c.fd.get(), 64), "OK " + std::to_string(req.hdr.src_port) + "\n");
  c.host_port = req.hdr.src_port;
  c.guest_port = 52;

  send_all(c.fd.get(), "hello guest");
  Packet rw = expect_packet();
  EXPECT_EQ(rw.hdr.op, kOpRw);
  EXPECT_EQ(rw.hdr.src_port, c.host_port);
  EXPECT_EQ(rw.hdr.dst_port, 52u);
  EXPECT_EQ(str(rw.payload), "hello guest");
  EXPECT_EQ(rw.used_len, kHeaderSize + 11);

  guest_write(c, "hello host");
  EXPECT_EQ(read_some(c.fd.get()), "hello host");
  EXPECT_EQ(guest_.errors.bad_request, 0u);
}

TEST_F(VsockTest, BytesAfterTheConnectLineReachTheGuestAfterOk) {
  start();
  UniqueFd fd = unix_connect(path_);
  send_all(fd.get(), "CONNECT 52\nearly bytes");
  Packet req = expect_packet();
  ASSERT_EQ(req.hdr.op, kOpRequest);
  EXPECT_TRUE(no_packet());  // nothing goes before the connection is up
  guest_.send(guest_.hdr(kOpResponse, 52, req.hdr.src_port));
  Packet rw = expect_packet();
  EXPECT_EQ(rw.hdr.op, kOpRw);
  EXPECT_EQ(str(rw.payload), "early bytes");
}

TEST_F(VsockTest, ConnectLineInPieces) {
  start();
  UniqueFd fd = unix_connect(path_);
  send_all(fd.get(), "CONN");
  EXPECT_TRUE(no_packet());
  send_all(fd.get(), "ECT 10");
  EXPECT_TRUE(no_packet());
  send_all(fd.get(), "24\n");
  Packet req = expect_packet();
  EXPECT_EQ(req.hdr.op, kOpRequest);
  EXPECT_EQ(req.hdr.dst_port, 1024u);
}

TEST_F(VsockTest, HostConnectBeforeTheDriverIsUp) {
  make_device();
  UniqueFd fd = unix_connect(path_);
  send_all(fd.get(), "CONNECT 52\n");
  dev_->service_host_sockets();  // line read; no driver yet
  ASSERT_TRUE(guest_.activate(*dev_).ok());
  Packet req = expect_packet();
  EXPECT_EQ(req.hdr.op, kOpRequest);
  guest_.send(guest_.hdr(kOpResponse, 52, req.hdr.src_port));
  EXPECT_EQ(read_some(fd.get(), 64), "OK " + std::to_string(req.hdr.src_port) + "\n");
}

TEST_F(VsockTest, EachHostConnectionGetsItsOwnPort) {
  start();
  HostConn a = open_from_host(52);
  HostConn b = open_from_host(52);
  EXPECT_NE(a.host_port, b.host_port);
  send_all(b.fd.get(), "to b");
  Packet p = expect_packet();
  EXPECT_EQ(p.hdr.src_port, b.host_port);
  guest_write(a, "for a");
  EXPECT_EQ(read_some(a.fd.get()), "for a");
  EXPECT_EQ(read_some(b.fd.get(), 64, 50), "");
}

TEST_F(VsockTest, GuestRefusalClosesTheHostConnection) {
  start();
  UniqueFd fd = unix_connect(path_);
  send_all(fd.get(), "CONNECT 7\n");
  Packet req = expect_packet();
  guest_.send(guest_.hdr(kOpRst, 7, req.hdr.src_port));
  EXPECT_TRUE(sees_eof(fd.get()));
  EXPECT_EQ(dev_->stats().connections, 0u);
  EXPECT_TRUE(no_packet());  // an RST is not answered
}

TEST_F(VsockTest, MalformedConnectLinesAreClosed) {
  start();
  const std::string long_line(40, 'C');
  for (const std::string& line :
       {std::string("CONNECT abc\n"), std::string("connect 52\n"), std::string("CONNECT 52 \n"),
        std::string("CONNECT 99999999999\n"), std::string("CONNECT -1\n"),
        std::string("CONNECT \n"), std::string("\n"), long_line}) {
    UniqueFd fd = unix_connect(path_);
    send_all(fd.get(), line);
    service();
    EXPECT_TRUE(sees_eof(fd.get())) << line;
  }
  UniqueFd eof = unix_connect(path_);
  send_all(eof.get(), "CONNECT 5");
  ::shutdown(eof.get(), SHUT_WR);  // closed before the newline
  service();
  EXPECT_TRUE(sees_eof(eof.get()));
  EXPECT_TRUE(guest_.inbox.empty());
  EXPECT_EQ(dev_->stats().connections, 0u);
}

TEST_F(VsockTest, HandshakeTimeouts) {
  VsockOptions opts;
  opts.connect_timeout_ns = 1'000'000;  // 1 ms
  start(opts);
  UniqueFd silent = unix_connect(path_);  // never sends its line
  UniqueFd unanswered = unix_connect(path_);
  send_all(unanswered.get(), "CONNECT 52\n");
  Packet req = expect_packet();
  ASSERT_EQ(req.hdr.op, kOpRequest);
  dev_->expire_deadlines(VirtioVsock::now_ns() + 1'000'000'000);
  EXPECT_TRUE(sees_eof(silent.get()));
  EXPECT_TRUE(sees_eof(unanswered.get()));
  // The guest is told to forget the half-open connection.
  Packet rst = expect_packet();
  EXPECT_EQ(rst.hdr.op, kOpRst);
  EXPECT_EQ(rst.hdr.src_port, req.hdr.src_port);
  EXPECT_EQ(rst.hdr.dst_port, 52u);
  EXPECT_EQ(dev_->stats().connections, 0u);
  // A late RESPONSE is refused.
  guest_.send(guest_.hdr(kOpResponse, 52, req.hdr.src_port));
  EXPECT_EQ(expect_packet().hdr.op, kOpRst);
}

TEST_F(VsockTest, TimerFiresOnTheEventLoop) {
  VsockOptions opts;
  opts.connect_timeout_ns = 20'000'000;  // 20 ms
  start(opts);
  loop_->start_thread();
  UniqueFd silent = unix_connect(path_);
  EXPECT_TRUE(sees_eof(silent.get(), 3000));
}

TEST_F(VsockTest, HostLeavingBeforeTheAnswerResetsTheGuest) {
  start();
  UniqueFd fd = unix_connect(path_);
  send_all(fd.get(), "CONNECT 52\n");
  Packet req = expect_packet();
  fd.reset();
  // The device notices on the socket's hang-up event.
  loop_->start_thread();
  for (int i = 0; i < 200 && dev_->stats().connections != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  Packet rst = expect_packet();
  EXPECT_EQ(rst.hdr.op, kOpRst);
  EXPECT_EQ(rst.hdr.src_port, req.hdr.src_port);
}

TEST_F(VsockTest, EventLoopDrivesHostConnections) {
  start();
  loop_->start_thread();
  UniqueFd fd = unix_connect(path_);
  send_all(fd.get(), "CONNECT 52\n");
  for (int i = 0; i < 400 && guest_.inbox.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    guest_.poll_rx();
  }
  ASSERT_FALSE(guest_.inbox.empty());
  Packet req = std::move(guest_.inbox.front());
  guest_.inbox.pop_front();
  ASSERT_EQ(req.hdr.op, kOpRequest);
  guest_.send(guest_.hdr(kOpResponse, 52, req.hdr.src_port));
  EXPECT_EQ(read_some(fd.get(), 64), "OK " + std::to_string(req.hdr.src_port) + "\n");
  send_all(fd.get(), "ping");
  for (int i = 0; i < 400 && guest_.inbox.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    guest_.poll_rx();
  }
  ASSERT_FALSE(guest_.inbox.empty());
  EXPECT_EQ(str(guest_.inbox.front().payload), "ping");
}

// AgentClient::connect_vsock_uds to port 52 on a thread of its own: it blocks until the guest
// answers the REQUEST it causes.
struct AgentConnect {
  explicit AgentConnect(const std::string& path)
      : host([this, path] { client.emplace(AgentClient::connect_vsock_uds(path, 52)); }) {}
  Result<AgentClient>& join() {
    host.join();
    return *client;
  }
  std::optional<Result<AgentClient>> client;
  std::thread host;
};

// AgentClient::connect_vsock_uds writes exactly "CONNECT 52\n" and reads byte by byte up to the
// newline; it must get "OK <n>\n" and then the agent's stream, nothing else.
TEST_F(VsockTest, AgentClientHandshakeMatches) {
  start();
  AgentConnect connect(path_);
  Packet req = wait_for_op(kOpRequest, 2000, std::chrono::milliseconds(1), true);
  ASSERT_EQ(req.hdr.op, kOpRequest);
  EXPECT_EQ(req.hdr.dst_port, 52u);
  guest_.send(guest_.hdr(kOpResponse, 52, req.hdr.src_port));
  Result<AgentClient>& client = connect.join();
  ASSERT_TRUE(client.ok()) << client.error().describe();
}

TEST_F(VsockTest, AgentClientSeesTheRefusal) {
  start();
  AgentConnect connect(path_);
  Packet req = wait_for_op(kOpRequest, 2000, std::chrono::milliseconds(1), true);
  ASSERT_EQ(req.hdr.op, kOpRequest);
  guest_.send(guest_.hdr(kOpRst, 52, req.hdr.src_port));  // nothing listens on 52 yet
  EXPECT_FALSE(connect.join().ok());
}

class NullIrq : public virtio::Interrupt {
 public:
  void trigger() override {}
};

TEST_F(VsockTest, ThroughTheMmioTransport) {
  make_device();
  NullIrq irq;
  auto t = virtio::MmioTransport::create(dev_, mem_, &irq, nullptr, 0xd0000000);
  ASSERT_TRUE(t.ok());
  auto rd = [&](uint64_t off) {
    uint32_t v = 0;
    (*t)->read(off, {reinterpret_cast<uint8_t*>(&v), 4});
    return v;
  };
  EXPECT_EQ(rd(virtio::offset_of(virtio::MmioReg::kDeviceId)), 19u);
  EXPECT_EQ(rd(0x100), kCid);  // config space: guest_cid, low half
  EXPECT_EQ(rd(0x104), 0u);
}

}  // namespace
}  // namespace carapace::vsock::fake
