// Guest-initiated connections (a REQUEST to host port P reaches the listener at <uds>_<P>), no
// listener → RST, and OP_SHUTDOWN both ways (virtio 1.2 §5.10.6.5).
#include <gtest/gtest.h>

#include "tests/unit/devices/vsock/vsock_fixture.h"

namespace carapace::vsock::fake {
namespace {

TEST_F(VsockTest, GuestConnectsToAHostListener) {
  start();
  UniqueFd listener = unix_listen(port_path(5000));
  ASSERT_TRUE(listener.valid());
  guest_.send(guest_.hdr(kOpRequest, 1234, 5000));
  Packet resp = expect_packet();
  EXPECT_EQ(resp.hdr.op, kOpResponse);
  EXPECT_EQ(resp.hdr.src_cid, kHostCid);
  EXPECT_EQ(resp.hdr.dst_cid, kCid);
  EXPECT_EQ(resp.hdr.src_port, 5000u);
  EXPECT_EQ(resp.hdr.dst_port, 1234u);
  EXPECT_EQ(resp.hdr.buf_alloc, VsockOptions{}.buf_alloc);
  UniqueFd host(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_TRUE(host.valid());
  HostConn c{std::move(host), 5000, 1234};

  guest_write(c, "from the guest");
  EXPECT_EQ(read_some(c.fd.get()), "from the guest");  // no handshake line this way
  send_all(c.fd.get(), "from the host");
  Packet rw = expect_packet();
  EXPECT_EQ(rw.hdr.op, kOpRw);
  EXPECT_EQ(rw.hdr.src_port, 5000u);
  EXPECT_EQ(rw.hdr.dst_port, 1234u);
  EXPECT_EQ(str(rw.payload), "from the host");
}

TEST_F(VsockTest, NoListenerMeansRst) {
  start();
  guest_.send(guest_.hdr(kOpRequest, 1234, 6000));
  Packet rst = expect_packet();
  EXPECT_EQ(rst.hdr.op, kOpRst);
  EXPECT_EQ(rst.hdr.src_port, 6000u);
  EXPECT_EQ(rst.hdr.dst_port, 1234u);
  EXPECT_EQ(rst.hdr.dst_cid, kCid);
  EXPECT_EQ(dev_->stats().connections, 0u);
  // A stale socket file with nobody listening is the same.
  { UniqueFd gone = unix_listen(port_path(6001)); }
  guest_.send(guest_.hdr(kOpRequest, 1235, 6001));
  EXPECT_EQ(expect_packet().hdr.op, kOpRst);
}

TEST_F(VsockTest, PacketsForUnknownConnectionsGetRst) {
  start();
  for (uint16_t op : {kOpResponse, kOpShutdown, kOpCreditUpdate, kOpCreditRequest}) {
    guest_.send(guest_.hdr(op, 1, 2));
    Packet rst = expect_packet();
    EXPECT_EQ(rst.hdr.op, kOpRst) << op;
  }
  guest_.send(guest_.hdr(kOpRw, 1, 2, 3), bytes_of("abc"));
  EXPECT_EQ(expect_packet().hdr.op, kOpRst);
  guest_.send(guest_.hdr(kOpRst, 1, 2));
  EXPECT_TRUE(no_packet());
}

TEST_F(VsockTest, CreditRequestIsAnswered) {
  HostConn c = start_connected();
  guest_write(c, "12345");
  EXPECT_EQ(read_some(c.fd.get()), "12345");
  guest_.send(guest_.hdr(kOpCreditRequest, 1234, 5000));
  Packet up = expect_packet();
  EXPECT_EQ(up.hdr.op, kOpCreditUpdate);
  EXPECT_EQ(up.hdr.fwd_cnt, 5u);
  EXPECT_EQ(up.hdr.buf_alloc, VsockOptions{}.buf_alloc);
}

TEST_F(VsockTest, GuestHalfCloseGivesTheHostEofAndDataStillFlowsBack) {
  HostConn c = start_connected();
  guest_write(c, "last words");
  // flags = SEND only: the guest still reads.
  Header h = guest_.hdr(kOpShutdown, 1234, 5000);
  h.flags = kShutdownSend;
  guest_.send(h);
  EXPECT_EQ(read_some(c.fd.get()), "last words");
  EXPECT_TRUE(sees_eof(c.fd.get()));
  send_all(c.fd.get(), "reply");
  Packet rw = expect_packet();
  EXPECT_EQ(rw.hdr.op, kOpRw);
  EXPECT_EQ(str(rw.payload), "reply");
}

TEST_F(VsockTest, GuestFullShutdownIsAnsweredWithRst) {
  HostConn c = start_connected();
  Header h = guest_.hdr(kOpShutdown, 1234, 5000);
  h.flags = kShutdownBoth;
  guest_.send(h);
  Packet rst = expect_packet();
  EXPECT_EQ(rst.hdr.op, kOpRst);
  EXPECT_EQ(rst.hdr.src_port, 5000u);
  EXPECT_EQ(rst.hdr.dst_port, 1234u);
  EXPECT_TRUE(sees_eof(c.fd.get()));
  EXPECT_EQ(dev_->stats().connections, 0u);
}

TEST_F(VsockTest, ShutdownFlagsAccumulate) {
  HostConn c = start_connected();
  Header h = guest_.hdr(kOpShutdown, 1234, 5000);
  h.flags = kShutdownRcv;
  guest_.send(h);
  EXPECT_TRUE(no_packet());
  h.flags = kShutdownSend;
  guest_.send(h);
  EXPECT_EQ(expect_packet().hdr.op, kOpRst);
}

TEST_F(VsockTest, DataAfterGuestShutdownSendIsRst) {
  HostConn c = start_connected();
  Header h = guest_.hdr(kOpShutdown, 1234, 5000);
  h.flags = kShutdownSend;
  guest_.send(h);
  guest_write(c, "more");
  EXPECT_EQ(expect_packet().hdr.op, kOpRst);
  EXPECT_TRUE(sees_eof(c.fd.get()));
}

TEST_F(VsockTest, HostCloseSendsShutdownThenGuestRstEndsIt) {
  HostConn c = start_connected();
  send_all(c.fd.get(), "bye");
  c.fd.reset();
  Packet rw = expect_packet();
  EXPECT_EQ(rw.hdr.op, kOpRw);
  EXPECT_EQ(str(rw.payload), "bye");
  Packet sd = expect_packet();
  EXPECT_EQ(sd.hdr.op, kOpShutdown);
  EXPECT_TRUE(sd.hdr.flags & kShutdownSend);
  guest_.send(guest_.hdr(kOpRst, 1234, 5000));
  EXPECT_EQ(dev_->stats().connections, 0u);
  EXPECT_TRUE(no_packet());
}

TEST_F(VsockTest, HostHalfCloseKeepsTheGuestDirection) {
  HostConn c = start_connected();
  ::shutdown(c.fd.get(), SHUT_WR);
  Packet sd = expect_packet();
  EXPECT_EQ(sd.hdr.op, kOpShutdown);
  EXPECT_EQ(sd.hdr.flags, kShutdownSend);
  guest_write(c, "still listening");
  EXPECT_EQ(read_some(c.fd.get()), "still listening");
}

TEST_F(VsockTest, ShutdownWithoutGuestRstTimesOut) {
  VsockOptions opts;
  opts.shutdown_timeout_ns = 1'000'000;
  HostConn c = start_connected(opts);
  c.fd.reset();
  loop_->start_thread();  // the hang-up event says the host is gone both ways
  Packet sd = wait_for_op(kOpShutdown, 200, std::chrono::milliseconds(5), false);
  ASSERT_EQ(sd.hdr.op, kOpShutdown);
  // The hang-up came with the first event: the host will neither send nor receive.
  ASSERT_EQ(sd.hdr.flags, kShutdownBoth);
  Packet rst = wait_for_op(kOpRst, 400, std::chrono::milliseconds(5), false);
  EXPECT_EQ(rst.hdr.op, kOpRst);
  EXPECT_EQ(dev_->stats().connections, 0u);
}

}  // namespace
}  // namespace carapace::vsock::fake
