// docs/security.md #17 (bad packets: RST or drop; credit that cannot overflow) and 18 (a per-VM
// connection cap; no host fd leaks), end to end through the device's queues.
#include <gtest/gtest.h>

#include <fcntl.h>

#include <vector>

#include "tests/unit/devices/vsock/vsock_fixture.h"

namespace carapace::vsock::fake {
namespace {

TEST_F(VsockTest, SecurityCheck17_EachBadPacketGetsRst) {
  start();
  struct Case {
    const char* what;
    Header h;
    size_t payload;
  };
  auto with = [&](auto f) {
    Header h = guest_.hdr(kOpRequest, 1000, 5000);
    f(h);
    return h;
  };
  const std::vector<Case> cases = {
      {"spoofed source CID", with([](Header& h) { h.src_cid = kCid + 1; }), 0},
      {"source CID upper bits", with([](Header& h) { h.src_cid |= 1ull << 40; }), 0},
      {"destination not the host", with([](Header& h) { h.dst_cid = 3; }), 0},
      {"seqpacket", with([](Header& h) { h.type = kTypeSeqpacket; }), 0},
      {"unknown type", with([](Header& h) { h.type = 9; }), 0},
      {"op 0", with([](Header& h) { h.op = 0; }), 0},
      {"op 8", with([](Header& h) { h.op = 8; }), 0},
      {"len above payload", with([](Header& h) { h.len = 100; }), 10},
      {"len below payload", with([](Header& h) { h.len = 1; }), 10},
      {"len above max", with([](Header& h) {
         h.op = kOpRw;
         h.len = kMaxPayload + 1;
       }),
       kMaxPayload + 1},
      {"len 4 GiB", with([](Header& h) { h.len = UINT32_MAX; }), 0},
      {"payload on REQUEST", with([](Header& h) { h.len = 3; }), 3},
  };
  uint64_t errors = 0;
  for (const Case& c : cases) {
    std::vector<uint8_t> payload(c.payload, 0xab);
    ASSERT_TRUE(guest_.send(c.h, payload));
    Packet rst = expect_packet();
    EXPECT_EQ(rst.hdr.op, kOpRst) << c.what;
    EXPECT_EQ(rst.hdr.src_cid, kHostCid) << c.what;
    EXPECT_EQ(rst.hdr.dst_cid, kCid) << c.what;  // the real guest, never the spoofed CID
    EXPECT_EQ(rst.hdr.src_port, 5000u) << c.what;
    EXPECT_EQ(rst.hdr.dst_port, 1000u) << c.what;
    EXPECT_EQ(rst.hdr.len, 0u) << c.what;
    EXPECT_EQ(guest_.errors.bad_request, ++errors) << c.what;
  }
  EXPECT_EQ(dev_->stats().connections, 0u);
  EXPECT_EQ(dev_->stats().bad_packets, cases.size());
  EXPECT_EQ(guest_.tx_completed(), cases.size());  // every chain went back to the guest
  EXPECT_EQ(guest_.signals.needs_reset, 0);
}

TEST_F(VsockTest, SecurityCheck17_BadRstIsDropped) {
  start();
  Header h = guest_.hdr(kOpRst, 1000, 5000);
  h.src_cid = 77;
  guest_.send(h);
  h = guest_.hdr(kOpRst, 1000, 5000, 8);
  guest_.send(h);  // len without payload
  EXPECT_TRUE(no_packet());
  EXPECT_EQ(dev_->stats().bad_packets, 2u);
}

TEST_F(VsockTest, SecurityCheck17_ShortChainIsDroppedAndReturned) {
  start();
  const std::vector<uint8_t> stub(20, 1);
  guest_.send_raw(stub);
  guest_.send_raw({});  // a zero-length descriptor: no readable bytes at all
  EXPECT_TRUE(no_packet());
  EXPECT_EQ(guest_.tx_completed(), 2u);
  EXPECT_EQ(guest_.errors.bad_request, 2u);
  // The queue goes on.
  guest_.send(guest_.hdr(kOpRequest, 1, 9999));
  EXPECT_EQ(expect_packet().hdr.op, kOpRst);
}

TEST_F(VsockTest, SecurityCheck17_BadPacketOnALiveConnectionEndsIt) {
  HostConn c = start_connected();
  Header h = guest_.hdr(kOpRw, 1234, 5000, 50);  // claims 50, carries 5
  guest_.send(h, bytes_of("short"));
  Packet rst = expect_packet();
  EXPECT_EQ(rst.hdr.op, kOpRst);
  EXPECT_EQ(rst.hdr.dst_port, 1234u);
  EXPECT_TRUE(sees_eof(c.fd.get()));
  EXPECT_EQ(dev_->stats().connections, 0u);
  EXPECT_TRUE(no_packet());  // one RST, not two
}

TEST_F(VsockTest, SecurityCheck17_LenAboveBufAllocIsRst) {
  VsockOptions opts;
  opts.buf_alloc = 4096;
  HostConn c = start_connected(opts);
  std::vector<uint8_t> fits(4096, 'a');
  guest_.send(guest_.hdr(kOpRw, 1234, 5000, 4096), fits);
  EXPECT_EQ(read_some(c.fd.get()).size(), 4096u);
  std::vector<uint8_t> too_much(4097, 'b');
  guest_.send(guest_.hdr(kOpRw, 1234, 5000, 4097), too_much);
  Packet p = expect_packet();
  while (p.hdr.op == kOpCreditUpdate)
    p = expect_packet();
  EXPECT_EQ(p.hdr.op, kOpRst);
  EXPECT_TRUE(sees_eof(c.fd.get()));
}

// A guest that ignores its credit while the host reader sleeps: the device holds at most
// buf_alloc bytes, then resets the connection.
TEST_F(VsockTest, SecurityCheck17_CreditIgnoredWhileHostStallsStaysBounded) {
  VsockOptions opts;
  opts.buf_alloc = 8192;
  HostConn c = start_connected(opts);
  std::vector<uint8_t> chunk(4096, 'x');
  bool reset_seen = false;
  for (int i = 0; i < 2000 && !reset_seen; ++i) {
    ASSERT_TRUE(guest_.send(guest_.hdr(kOpRw, 1234, 5000, 4096), chunk));
    EXPECT_LE(dev_->stats().buffered_bytes, opts.buf_alloc);
    guest_.poll_rx();
    for (const Packet& p : guest_.inbox)
      reset_seen |= p.hdr.op == kOpRst;
    guest_.inbox.clear();
  }
  EXPECT_TRUE(reset_seen);
  EXPECT_EQ(dev_->stats().buffered_bytes, 0u);
}

TEST_F(VsockTest, SecurityCheck17_BogusGuestCreditGivesNoCredit) {
  guest_.fwd_cnt = 1000;  // claims to have consumed bytes it was never sent
  guest_.buf_alloc = 4096;
  HostConn c = start_connected();
  send_all(c.fd.get(), "data");
  Packet p = expect_packet();
  EXPECT_EQ(p.hdr.op, kOpCreditRequest);  // no data: 0 - 1000 wraps, it is no credit
  EXPECT_TRUE(no_packet());
  guest_.fwd_cnt = 0;
  guest_.buf_alloc = 2;
  guest_.send(guest_.hdr(kOpCreditUpdate, 1234, 5000));
  Packet rw = expect_packet();
  EXPECT_EQ(rw.hdr.op, kOpRw);
  EXPECT_EQ(str(rw.payload), "da");  // exactly the credit
  EXPECT_EQ(expect_packet().hdr.op, kOpCreditRequest);
  guest_.fwd_cnt = 2;
  guest_.send(guest_.hdr(kOpCreditUpdate, 1234, 5000));
  EXPECT_EQ(str(expect_packet().payload), "ta");
}

TEST_F(VsockTest, SecurityCheck18_GuestRequestFloodHitsTheCapWithoutFdLeaks) {
  EXPECT_EQ(VsockOptions{}.max_connections, 1024u);
  VsockOptions opts;
  opts.max_connections = 100;
  start(opts);
  UniqueFd listener = unix_listen(port_path(5000), 512);
  ::fcntl(listener.get(), F_SETFL, O_NONBLOCK);
  const size_t baseline = count_open_fds();
  std::vector<UniqueFd> accepted;
  auto accept_all = [&] {
    for (;;) {
      int fd = ::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) break;
      accepted.emplace_back(fd);
    }
  };
  for (uint32_t i = 0; i < 150; ++i) {
    while (!guest_.send(guest_.hdr(kOpRequest, 10000 + i, 5000)))
      guest_.poll_rx();
    accept_all();
  }
  guest_.poll_rx();
  size_t responses = 0, rsts = 0;
  for (const Packet& p : guest_.inbox) {
    responses += p.hdr.op == kOpResponse;
    rsts += p.hdr.op == kOpRst;
  }
  guest_.inbox.clear();
  EXPECT_EQ(responses, 100u);
  EXPECT_EQ(rsts, 50u);
  EXPECT_EQ(dev_->stats().connections, 100u);
  EXPECT_EQ(dev_->stats().refused_by_cap, 50u);
  EXPECT_EQ(accepted.size(), 100u);

  // Ending one connection frees a place.
  guest_.send(guest_.hdr(kOpRst, 10000, 5000));
  guest_.send(guest_.hdr(kOpRequest, 20000, 5000));
  EXPECT_EQ(expect_packet().hdr.op, kOpResponse);
  accept_all();

  dev_->reset();
  EXPECT_EQ(dev_->stats().connections, 0u);
  for (UniqueFd& fd : accepted)
    EXPECT_TRUE(sees_eof(fd.get(), 100));
  accepted.clear();
  EXPECT_EQ(count_open_fds(), baseline);
}

TEST_F(VsockTest, SecurityCheck18_HostConnectFloodHitsTheCapWithoutFdLeaks) {
  VsockOptions opts;
  opts.max_connections = 20;
  start(opts);
  const size_t baseline = count_open_fds();
  {
    std::vector<UniqueFd> host;
    for (int i = 0; i < 30; ++i) {
      host.push_back(unix_connect(path_));
      ASSERT_TRUE(host.back().valid());
    }
    service();
    int closed = 0;
    for (UniqueFd& fd : host)
      closed += sees_eof(fd.get(), 10);
    EXPECT_EQ(closed, 10);
    EXPECT_EQ(dev_->stats().connections, 20u);
    EXPECT_EQ(dev_->stats().refused_by_cap, 10u);
  }
  service();  // the device sees the hang-ups
  dev_->reset();
  EXPECT_EQ(dev_->stats().connections, 0u);
  EXPECT_EQ(count_open_fds(), baseline);
}

TEST_F(VsockTest, SecurityCheck18_RstBacklogStallsTxInsteadOfGrowing) {
  VsockOptions opts;
  opts.max_pending_rst = 8;
  make_device(opts);
  ASSERT_TRUE(guest_.activate(*dev_, /*give_rx=*/false).ok());
  guest_.auto_refill = false;
  // Requests to a port nobody listens on, with no rx buffer to answer in.
  uint32_t sent = 0;
  while (guest_.send(guest_.hdr(kOpRequest, 100 + sent, 7777)))
    ++sent;
  // The device took only what it can answer; the guest then filled the ring.
  EXPECT_EQ(guest_.tx_completed(), opts.max_pending_rst);
  EXPECT_EQ(sent, opts.max_pending_rst + kTxSlots);
  guest_.auto_refill = true;
  guest_.give_rx_buffers(kRingSize);
  guest_.poll_rx();
  EXPECT_EQ(guest_.tx_completed(), sent);
  EXPECT_EQ(guest_.inbox.size(), sent);
  for (const Packet& p : guest_.inbox)
    EXPECT_EQ(p.hdr.op, kOpRst);
}

// docs/security.md #12/18: a guest that opens and resets connections forever while never giving
// an rx buffer keeps the device's backlog bounded.
TEST_F(VsockTest, SecurityCheck18_ConnectResetChurnWithoutRxBuffersStaysBounded) {
  make_device();
  ASSERT_TRUE(guest_.activate(*dev_, /*give_rx=*/false).ok());
  guest_.auto_refill = false;
  UniqueFd listener = unix_listen(port_path(5000), 512);
  ::fcntl(listener.get(), F_SETFL, O_NONBLOCK);
  const size_t baseline = count_open_fds();
  size_t max_queued = 0;
  for (uint32_t i = 0; i < 5000; ++i) {
    ASSERT_TRUE(guest_.send(guest_.hdr(kOpRequest, 10000 + i % 50, 5000)));
    ASSERT_TRUE(guest_.send(guest_.hdr(kOpRst, 10000 + i % 50, 5000)));
    int fd = ::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) ::close(fd);
    max_queued = std::max(max_queued, dev_->stats().queued_for_guest);
  }
  EXPECT_LE(max_queued, 200u);
  EXPECT_EQ(dev_->stats().connections, 0u);
  EXPECT_EQ(count_open_fds(), baseline);
}

}  // namespace
}  // namespace carapace::vsock::fake
