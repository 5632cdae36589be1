// Credit-based flow control (virtio 1.2 §5.10.6.3) with slow readers on either side, the
// transport-reset event (§5.10.6.7), device reset mid-stream, and a corrupt ring.
#include <gtest/gtest.h>

#include <numeric>

#include "tests/unit/devices/vsock/vsock_fixture.h"

namespace carapace::vsock::fake {
namespace {

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<uint8_t>(i * 7 + i / 251);
  return v;
}

// A guest that honours the device's credit, as Linux does: it tracks the buf_alloc and fwd_cnt of
// every packet the device sends for the connection.
struct GuestSender {
  uint32_t buf_alloc = 0, fwd_cnt = 0, sent = 0;
  void learn(const Packet& p) {
    buf_alloc = p.hdr.buf_alloc;
    fwd_cnt = p.hdr.fwd_cnt;
  }
  uint32_t credit() const { return free_credit(buf_alloc, sent, fwd_cnt); }
};

TEST_F(VsockTest, SlowHostReaderKeepsDeviceMemoryBounded) {
  VsockOptions opts;
  opts.buf_alloc = 16 * 1024;
  HostConn c = start_connected(opts);
  GuestSender s;
  s.buf_alloc = opts.buf_alloc;  // from the RESPONSE
  const std::vector<uint8_t> data = pattern(2 << 20);
  size_t off = 0;
  std::string received;
  size_t stalls = 0;
  while (received.size() < data.size()) {
    // The guest sends what its credit allows, in packets of at most 4 KiB.
    while (off < data.size() && s.credit() > 0) {
      const uint32_t n = std::min<uint32_t>({s.credit(), 4096u, uint32_t(data.size() - off)});
      ASSERT_TRUE(guest_.send(guest_.hdr(kOpRw, 1234, 5000, n), {data.data() + off, n}));
      s.sent += n;
      off += n;
      ASSERT_LE(dev_->stats().buffered_bytes, opts.buf_alloc);
    }
    guest_.poll_rx();
    for (const Packet& p : guest_.inbox) {
      ASSERT_NE(p.hdr.op, kOpRst);
      s.learn(p);
    }
    guest_.inbox.clear();
    if (s.credit() == 0 && off < data.size()) {
      // Out of credit: the host reader wakes up and drains what is in its socket.
      ++stalls;
      std::string got = read_some(c.fd.get(), 1 << 20, 100);
      received += got;
      service();  // EPOLLOUT: the device flushes its buffer and announces the credit
    } else if (off == data.size()) {
      std::string got = read_some(c.fd.get(), 1 << 20, 100);
      if (got.empty()) service();
      received += got;
    }
  }
  EXPECT_GT(stalls, 0u);  // the reader really was slow
  EXPECT_EQ(received.size(), data.size());
  EXPECT_TRUE(std::equal(data.begin(), data.end(), received.begin(),
                         [](uint8_t a, char b) { return a == static_cast<uint8_t>(b); }));
  EXPECT_EQ(dev_->stats().buffered_bytes, 0u);
}

TEST_F(VsockTest, HostToGuestNeverExceedsTheGuestCredit) {
  guest_.buf_alloc = 1000;
  HostConn c = start_connected();
  const std::vector<uint8_t> data = pattern(10000);
  send_all(c.fd.get(), std::string_view(reinterpret_cast<const char*>(data.data()), data.size()));
  std::vector<uint8_t> got;
  uint32_t consumed = 0;
  for (int round = 0; round < 100 && got.size() < data.size(); ++round) {
    uint32_t in_flight = 0;
    for (;;) {
      Packet p = expect_packet();
      if (p.hdr.op == kOpCreditRequest) break;
      ASSERT_EQ(p.hdr.op, kOpRw);
      in_flight += p.hdr.len;
      ASSERT_LE(in_flight, guest_.buf_alloc);  // never beyond the advertised space
      got.insert(got.end(), p.payload.begin(), p.payload.end());
      if (got.size() == data.size()) break;
    }
    consumed += in_flight;
    guest_.fwd_cnt = consumed;  // the guest application read it all
    guest_.send(guest_.hdr(kOpCreditUpdate, 1234, 5000));
  }
  EXPECT_EQ(got, data);
}

TEST_F(VsockTest, BulkTransferBothWaysWithDefaultBuffers) {
  start();
  HostConn c = open_from_host(52);
  const std::vector<uint8_t> data = pattern(1 << 20);
  // Host → guest through 4 KiB rx buffers: the device packs each buffer.
  std::thread writer([&] {
    send_all(c.fd.get(), std::string_view(reinterpret_cast<const char*>(data.data()), data.size()));
  });
  std::vector<uint8_t> got;
  uint32_t unannounced = 0;
  while (got.size() < data.size()) {
    Packet p = expect_packet();
    if (p.hdr.op == kOpCreditRequest) {  // it outran our updates: tell it what we consumed
      guest_.send(guest_.hdr(kOpCreditUpdate, 52, c.host_port));
      unannounced = 0;
      continue;
    }
    EXPECT_EQ(p.hdr.op, kOpRw);
    EXPECT_LE(p.hdr.len, 4096u);
    if (p.hdr.op != kOpRw || p.payload.empty()) break;
    got.insert(got.end(), p.payload.begin(), p.payload.end());
    guest_.fwd_cnt += p.hdr.len;
    unannounced += p.hdr.len;
    if (unannounced >= 64 * 1024) {
      guest_.send(guest_.hdr(kOpCreditUpdate, 52, c.host_port));
      unannounced = 0;
    }
  }
  writer.join();
  ASSERT_EQ(got, data);
  // Guest → host in 64 KiB packets while the host reads.
  std::string back;
  GuestSender s;
  s.buf_alloc = VsockOptions{}.buf_alloc;
  size_t off = 0;
  while (back.size() < data.size()) {
    while (off < data.size() && s.credit() > 0) {
      const uint32_t n = std::min<uint32_t>({s.credit(), kMaxPayload, uint32_t(data.size() - off)});
      ASSERT_TRUE(guest_.send(guest_.hdr(kOpRw, 52, c.host_port, n), {data.data() + off, n}));
      s.sent += n;
      off += n;
    }
    back += read_some(c.fd.get(), 1 << 20, 100);
    service();
    for (const Packet& p : guest_.inbox)
      s.learn(p);
    guest_.inbox.clear();
  }
  EXPECT_TRUE(std::equal(data.begin(), data.end(), back.begin(),
                         [](uint8_t a, char b) { return a == static_cast<uint8_t>(b); }));
}

TEST_F(VsockTest, TransportResetEventDropsEveryConnection) {
  start();
  const size_t baseline = count_open_fds();
  HostConn a = open_from_host(52);
  UniqueFd listener = unix_listen(port_path(5000));
  HostConn b = open_from_guest(listener.get(), 5000, 1234);
  EXPECT_EQ(dev_->stats().connections, 2u);
  dev_->send_transport_reset();
  EXPECT_EQ(guest_.events(), std::vector<uint32_t>{kEventTransportReset});
  EXPECT_EQ(guest_.signals.used[VirtioVsock::kEventQueue], 1);
  EXPECT_TRUE(sees_eof(a.fd.get()));
  EXPECT_TRUE(sees_eof(b.fd.get()));
  EXPECT_EQ(dev_->stats().connections, 0u);
  EXPECT_EQ(dev_->stats().events_posted, 1u);
  EXPECT_TRUE(no_packet());  // no RSTs: the event says it all
  a.fd.reset();
  b.fd.reset();
  listener.reset();
  ::unlink(port_path(5000).c_str());
  EXPECT_EQ(count_open_fds(), baseline);
  // The guest takes the event (gives its buffer back); then the host reconnects.
  guest_.refill_events();
  HostConn again = open_from_host(52);
  send_all(again.fd.get(), "x");
  EXPECT_EQ(str(expect_packet().payload), "x");
}

TEST_F(VsockTest, TransportResetWaitsForAnEventBuffer) {
  start();
  for (int i = 0; i < kEventBuffers; ++i)
    dev_->send_transport_reset();
  EXPECT_EQ(guest_.events().size(), size_t{kEventBuffers});
  dev_->send_transport_reset();  // no buffer left
  EXPECT_TRUE(guest_.events().empty());
  guest_.refill_events();
  EXPECT_EQ(guest_.events(), std::vector<uint32_t>{kEventTransportReset});
  EXPECT_EQ(dev_->stats().events_posted, uint64_t{kEventBuffers} + 1);
}

TEST_F(VsockTest, ResetMidStreamClosesEverythingAndTheDeviceComesBack) {
  VsockOptions opts;
  opts.buf_alloc = 64 * 1024;
  start(opts);
  const size_t baseline = count_open_fds();
  HostConn a = open_from_host(52);
  UniqueFd listener = unix_listen(port_path(5000));
  HostConn b = open_from_guest(listener.get(), 5000, 1234);
  // Bytes in flight: the host side of b does not read, so the device ends up holding some.
  GuestSender sender;
  sender.buf_alloc = opts.buf_alloc;
  std::vector<uint8_t> chunk(60000, 'z');
  for (int i = 0; i < 100 && dev_->stats().buffered_bytes == 0; ++i) {
    const uint32_t n = std::min<uint32_t>(sender.credit(), 60000);
    if (n > 0) {
      ASSERT_TRUE(guest_.send(guest_.hdr(kOpRw, 1234, 5000, n), {chunk.data(), n}));
      sender.sent += n;
    }
    guest_.poll_rx();
    for (const Packet& p : guest_.inbox)
      sender.learn(p);
    guest_.inbox.clear();
  }
  ASSERT_GT(dev_->stats().buffered_bytes, 0u);
  send_all(a.fd.get(), "unread by the guest");
  dev_->service_host_sockets();
  dev_->reset();
  EXPECT_EQ(dev_->stats().connections, 0u);
  EXPECT_EQ(dev_->stats().buffered_bytes, 0u);
  EXPECT_TRUE(sees_eof(a.fd.get()));
  std::string drained;
  for (std::string s; !(s = read_some(b.fd.get(), 1 << 20, 50)).empty();)
    drained += s;
  EXPECT_TRUE(sees_eof(b.fd.get()));
  dev_->queue_notify(VirtioVsock::kTxQueue);  // no driver: ignored
  a.fd.reset();
  b.fd.reset();
  listener.reset();
  ::unlink(port_path(5000).c_str());
  EXPECT_EQ(count_open_fds(), baseline);
  ASSERT_TRUE(guest_.activate(*dev_).ok());
  HostConn again = open_from_host(52);
  guest_write(again, "after reset");
  EXPECT_EQ(read_some(again.fd.get()), "after reset");
}

TEST_F(VsockTest, CorruptRxRingNeedsResetAndNothingElse) {
  HostConn c = start_connected();
  // avail.idx far beyond what the ring holds (docs/security.md #4).
  (void)mem_.write_obj(GuestAddress(0x2000 + 2), uint16_t{1000});
  send_all(c.fd.get(), "data");
  dev_->service_host_sockets();
  EXPECT_EQ(guest_.signals.needs_reset, 1);
  dev_->service_host_sockets();  // stays quiet until reset
  guest_.send(guest_.hdr(kOpRw, 1234, 5000, 1), bytes_of("q"));
  EXPECT_EQ(guest_.signals.needs_reset, 1);
  dev_->reset();
  EXPECT_TRUE(sees_eof(c.fd.get()));
}

// Sends guest → host until the device holds bytes the (non-reading) host socket refused;
// returns how many bytes the guest sent in all.
size_t fill_until_buffered(FakeVsockGuest& guest, VirtioVsock& dev, uint32_t buf_alloc,
                           uint32_t guest_port, uint32_t host_port) {
  GuestSender s;
  s.buf_alloc = buf_alloc;
  const std::vector<uint8_t> chunk = pattern(60000);
  for (int i = 0; i < 200 && dev.stats().buffered_bytes == 0; ++i) {
    const uint32_t n = std::min<uint32_t>(s.credit(), 60000);
    if (n > 0) {
      EXPECT_TRUE(guest.send(guest.hdr(kOpRw, guest_port, host_port, n), {chunk.data(), n}));
      s.sent += n;
    }
    guest.poll_rx();
    for (const Packet& p : guest.inbox)
      s.learn(p);
    guest.inbox.clear();
  }
  return s.sent;
}

// Found in review: a guest RST used to drop what the device still held for the host socket.
// virtio 1.2 §5.10.6.5: the RST ends the connection at once, but bytes the guest already sent
// (within its credit) are delivered first, as Linux's own vsock transport does for a peer's RST.
TEST_F(VsockTest, GuestRstStillDeliversBytesBufferedForTheHost) {
  VsockOptions opts;
  opts.buf_alloc = 64 * 1024;
  HostConn c = start_connected(opts);
  const size_t sent = fill_until_buffered(guest_, *dev_, opts.buf_alloc, 1234, 5000);
  ASSERT_GT(dev_->stats().buffered_bytes, 0u) << "the host socket never filled up";

  guest_.send(guest_.hdr(kOpRst, 1234, 5000));
  EXPECT_EQ(dev_->stats().draining, 1u);
  EXPECT_TRUE(no_packet());  // never answer an RST
  // For the guest the connection is gone: the same ports connect again at once.
  HostConn again = open_from_guest(listener_.get(), 5000, 1234);
  guest_write(again, "second");
  EXPECT_EQ(read_some(again.fd.get()), "second");

  // The old host socket gets every byte, then EOF.
  size_t got = 0;
  for (int i = 0; i < 1000; ++i) {
    got += read_some(c.fd.get(), 1 << 20, 10).size();
    dev_->service_host_sockets();  // EPOLLOUT: the device writes what it still holds
    if (got == sent && dev_->stats().draining == 0) break;
  }
  EXPECT_EQ(got, sent);
  EXPECT_TRUE(sees_eof(c.fd.get()));
  const auto st = dev_->stats();
  EXPECT_EQ(st.draining, 0u);
  EXPECT_EQ(st.bytes_dropped, 0u);
  EXPECT_EQ(st.connections, 1u);  // only `again`
}

TEST_F(VsockTest, DrainAfterGuestRstIsBoundedByTheShutdownTimeout) {
  VsockOptions opts;
  opts.buf_alloc = 64 * 1024;
  start(opts);
  const size_t baseline = count_socket_fds();
  UniqueFd listener = unix_listen(port_path(5000));
  HostConn c = open_from_guest(listener.get(), 5000, 1234);
  const size_t sent = fill_until_buffered(guest_, *dev_, opts.buf_alloc, 1234, 5000);
  const size_t held = dev_->stats().buffered_bytes;
  ASSERT_GT(held, 0u);
  guest_.send(guest_.hdr(kOpRst, 1234, 5000));
  ASSERT_EQ(dev_->stats().draining, 1u);
  // The host reader never reads: after shutdown_timeout_ns the device gives up and counts.
  dev_->expire_deadlines(VirtioVsock::now_ns() + opts.shutdown_timeout_ns + 1);
  const auto st = dev_->stats();
  EXPECT_EQ(st.connections, 0u);
  EXPECT_EQ(st.draining, 0u);
  EXPECT_EQ(st.buffered_bytes, 0u);
  EXPECT_EQ(st.bytes_dropped, held);
  size_t got = 0;
  for (std::string part; !(part = read_some(c.fd.get(), 1 << 20, 50)).empty();)
    got += part.size();
  EXPECT_EQ(got + held, sent);  // what the socket had taken, then EOF
  EXPECT_TRUE(sees_eof(c.fd.get()));
  c.fd.reset();
  listener.reset();
  EXPECT_EQ(count_socket_fds(), baseline);  // no host fd leaks (docs/security.md #18)
}

}  // namespace
}  // namespace carapace::vsock::fake
