// virtio-net flow control: a host flooding a full RX ring (docs/security.md #16), rate limits in
// both directions, a corrupt ring, and resets in the middle of traffic.
#include <gtest/gtest.h>

#include "tests/unit/devices/net/net_fixture.h"

namespace carapace::net::test {
namespace {

using NetFlowTest = NetFixture;

TEST_F(NetFlowTest, SecurityCheck16_FloodWhileRxRingFullThenDrainResumes) {
  make(base_config(), /*with_loop=*/true);
  init_driver();
  post_rx(4);
  notify(0);
  // The host floods until the device's socket queue is full (the kernel's bound).
  uint32_t sent = 0;
  while (sent < 5000 && peer_try_send(test_frame(sent, 200)))
    ++sent;
  ASSERT_GT(sent, 20u) << "the socket queue should hold a few frames";
  ASSERT_TRUE(wait_until([&] { return rx_used() == 4 && net_->rx_waiting_for_buffers(); }));
  // Ring full: the device holds one frame, is out of the event loop, and does not spin.
  EXPECT_FALSE(net_->rx_armed());
  // (An event epoll reported just before the fd left the loop may still run once: let it.)
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const uint64_t wakeups = net_->counters().backend_wakeups;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(net_->counters().backend_wakeups, wakeups);
  EXPECT_EQ(rx_used(), 4);
  // The guest drains in small steps; every frame arrives, in order, none twice.
  uint32_t next = 0;
  for (auto& f : take_rx())
    EXPECT_EQ(frame_seq(f), next++);
  for (int round = 0; next < sent && round < 10000; ++round) {
    post_rx(4);
    notify(0);
    ASSERT_TRUE(wait_until([&] { return rx_used() == static_cast<uint16_t>(rx_posted_); }) ||
                next + 4 > sent)
        << "RX did not resume after the guest added buffers (round " << round << ")";
    for (auto& f : take_rx()) {
      ASSERT_EQ(f.size(), 200u);
      ASSERT_EQ(frame_seq(f), next++);
    }
  }
  EXPECT_EQ(next, sent);
  EXPECT_EQ(net_->counters().rx_frames, sent);
  EXPECT_GE(net_->counters().rx_ring_full, 2u);
  // Drained: reading the backend again, and new frames flow at once.
  ASSERT_TRUE(wait_until([&] { return net_->rx_armed(); }));
  peer_send(test_frame(99999));
  post_rx(1);
  notify(0);
  ASSERT_TRUE(wait_until([&] { return rx_used() == static_cast<uint16_t>(rx_posted_); }));
  auto last = take_rx();
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(frame_seq(last[0]), 99999u);
}

TEST_F(NetFlowTest, TxRateLimitHoldsFramesInTheRing) {
  NetDeviceConfig c = base_config();
  c.tx_limit = {/*bytes=*/0, /*ops=*/2, /*refill_ns=*/3600ull * 1000000000};
  make(c);
  init_driver();
  send_tx(test_frame(1));
  send_tx(test_frame(2));
  send_tx(test_frame(3));
  EXPECT_EQ(tx_used(), 2);  // the third waits in the ring, not lost
  EXPECT_EQ(net_->counters().tx_throttled, 1u);
  EXPECT_EQ(frame_seq(*peer_recv(1000)), 1u);
  EXPECT_EQ(frame_seq(*peer_recv(1000)), 2u);
  EXPECT_FALSE(peer_recv(50).has_value());
}

TEST_F(NetFlowTest, TxRateLimitBytesResumesFromTheTimer) {
  NetDeviceConfig c = base_config();
  // 1000 bytes per 40 ms: 10 frames of 500 bytes take about 160 ms.
  c.tx_limit = {/*bytes=*/1000, /*ops=*/0, /*refill_ns=*/40ull * 1000000};
  make(c, /*with_loop=*/true);
  init_driver();
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < 8; ++i)
    queue_tx_raw(test_frame(i, 500));
  notify(1);
  for (uint32_t i = 0; i < 8; ++i) {
    auto f = peer_recv(3000);
    ASSERT_TRUE(f.has_value()) << "frame " << i << " never sent";
    EXPECT_EQ(frame_seq(*f), i);
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  EXPECT_GE(ms, 100) << "8 x 500 bytes at 1000 bytes / 40 ms cannot take less than 120 ms";
  EXPECT_GT(net_->counters().tx_throttled, 0u);
  ASSERT_TRUE(wait_until([&] { return tx_used() == 8; }));
}

TEST_F(NetFlowTest, RxRateLimitHoldsTheFrame) {
  NetDeviceConfig c = base_config();
  c.rx_limit = {/*bytes=*/0, /*ops=*/2, /*refill_ns=*/3600ull * 1000000000};
  make(c);
  init_driver();
  post_rx(4);
  notify(0);
  for (uint32_t i = 0; i < 3; ++i)
    peer_send(test_frame(i));
  notify(0);
  EXPECT_EQ(rx_used(), 2);
  EXPECT_EQ(net_->counters().rx_throttled, 1u);
  EXPECT_EQ(net_->counters().rx_dropped_no_room + net_->counters().rx_dropped_runt, 0u);
}

TEST_F(NetFlowTest, RxRateLimitResumesFromTheTimer) {
  NetDeviceConfig c = base_config();
  c.rx_limit = {/*bytes=*/0, /*ops=*/3, /*refill_ns=*/30ull * 1000000};
  make(c, /*with_loop=*/true);
  init_driver();
  post_rx(12);
  notify(0);
  for (uint32_t i = 0; i < 12; ++i)
    peer_send(test_frame(i));
  ASSERT_TRUE(wait_until([&] { return rx_used() == 12; }));
  auto got = take_rx();
  ASSERT_EQ(got.size(), 12u);
  for (uint32_t i = 0; i < 12; ++i)
    EXPECT_EQ(frame_seq(got[i]), i);
  EXPECT_GT(net_->counters().rx_throttled, 0u);
}

TEST_F(NetFlowTest, CorruptRxRingGoesNeedsResetAndStopsReading) {
  make(base_config(), /*with_loop=*/true);
  init_driver();
  peer_send(test_frame(1));
  ASSERT_TRUE(wait_until([&] { return net_->rx_waiting_for_buffers(); }));
  rx_.set_avail_idx(100);  // more than the ring holds
  notify(0);
  ASSERT_TRUE(wait_until([&] { return (rd(MmioReg::kStatus) & kNeedsReset) != 0; }));
  EXPECT_FALSE(net_->rx_armed());
  // A reset and a fresh driver bring it back; the held frame was dropped with the reset.
  init_driver();
  post_rx(2);
  notify(0);
  peer_send(test_frame(2));
  ASSERT_TRUE(wait_until([&] { return rx_used() == 1; }));
  EXPECT_EQ(frame_seq(take_rx()[0]), 2u);
  EXPECT_EQ(net_->counters().rx_dropped_reset, 1u);
}

TEST_F(NetFlowTest, ResetDuringTrafficIsSafe) {
  make(base_config(), /*with_loop=*/true);
  std::atomic<bool> stop{false};
  std::thread flood([&] {
    for (uint32_t i = 0; !stop; ++i)
      if (!peer_try_send(test_frame(i, 300)))
        std::this_thread::sleep_for(std::chrono::microseconds(50));
  });
  for (int round = 0; round < 30; ++round) {
    init_driver();  // writes status 0 first: a reset in the middle of traffic
    post_rx(8);
    notify(0);
    for (int i = 0; i < 4; ++i)
      send_tx(test_frame(1000 + i));
    std::this_thread::sleep_for(std::chrono::milliseconds(round % 3));
    if (round % 2) wr(MmioReg::kStatus, 0);
  }
  stop = true;
  flood.join();
  // Still a working device: a final driver sees both directions.
  while (peer_recv(0)) {
  }
  init_driver();
  send_tx(test_frame(4242));
  bool seen = false;
  for (int i = 0; i < 100 && !seen; ++i) {
    auto f = peer_recv(100);
    seen = f && frame_seq(*f) == 4242;
  }
  EXPECT_TRUE(seen);
  post_rx(8);
  notify(0);
  ASSERT_TRUE(wait_until([&] { return rx_used() == 8; })) << "RX did not come back after resets";
}

// Fills the harness socket's receive queue from another socket until the kernel refuses more
// (a Unix datagram receiver queues at most net.unix.max_dgram_qlen frames); returns how many.
uint32_t fill_peer_queue(const std::string& peer_path, UniqueFd& filler) {
  filler = UniqueFd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, peer_path.c_str(), sizeof a.sun_path - 1);
  uint32_t n = 0;
  while (n < 100000) {
    const Bytes f = test_frame(900000 + n);
    if (::sendto(filler.get(), f.data(), f.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&a),
                 sizeof a) < 0)
      break;
    ++n;
  }
  return n;
}

// Found in review: TX frames used to be dropped when the harness's socket was full. With
// max_dgram_qlen at 10 a burst lost frames. Now the device keeps the frame, stops taking chains
// and resumes when the guest notifies again or the socket becomes writable.
TEST_F(NetFlowTest, TxWaitsForAFullDatagramPeerInsteadOfDropping) {
  make(base_config());
  init_driver();
  UniqueFd filler;
  const uint32_t queued = fill_peer_queue(peer_path_, filler);
  ASSERT_GT(queued, 0u);
  for (uint32_t i = 0; i < 6; ++i)
    queue_tx_raw(test_frame(i));
  notify(1);
  // The first frame was refused: held, its chain returned; the others wait in the ring.
  EXPECT_TRUE(net_->tx_waiting_for_backend());
  EXPECT_EQ(tx_used(), 1);
  EXPECT_EQ(net_->counters().tx_backend_full, 1u);
  EXPECT_EQ(net_->counters().tx_dropped_backend, 0u);
  notify(1);  // still full: nothing moves, nothing is lost
  EXPECT_EQ(tx_used(), 1);
  EXPECT_TRUE(net_->tx_waiting_for_backend());
  // The harness reads its backlog; the next notify sends everything, in order.
  for (uint32_t i = 0; i < queued; ++i)
    ASSERT_TRUE(peer_recv(1000));
  notify(1);
  EXPECT_FALSE(net_->tx_waiting_for_backend());
  EXPECT_EQ(tx_used(), 6);
  std::vector<uint32_t> seqs;
  while (auto f = peer_recv(100))
    seqs.push_back(frame_seq(*f));
  EXPECT_EQ(seqs, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(net_->counters().tx_frames, 6u);
  EXPECT_EQ(net_->counters().tx_dropped_backend, 0u);
}

TEST_F(NetFlowTest, TxResumesFromEpolloutWhenThePeerDrains) {
  make(base_config(), /*with_loop=*/true);
  init_driver();
  UniqueFd filler;
  const uint32_t queued = fill_peer_queue(peer_path_, filler);
  ASSERT_GT(queued, 0u);
  // A burst larger than the peer's queue: more than max_dgram_qlen frames, as a guest sends them.
  constexpr uint32_t kFrames = 40;
  uint32_t next = 0;
  std::vector<uint32_t> got;
  for (int round = 0; round < 5000 && got.size() < kFrames; ++round) {
    // Up to 7 frames in the ring (8 two-descriptor slots), refilled as the device returns
    // chains. Once the device holds a frame nothing is returned, so no notify comes until it
    // resumes: the first resume can only come from EPOLLOUT, after the harness reads.
    while (next < kFrames && next - tx_used() < 7) {
      queue_tx_raw(test_frame(next++));
      notify(1);
    }
    if (round == 0) {
      ASSERT_TRUE(wait_until([&] { return net_->tx_waiting_for_backend(); }));
    }
    auto f = peer_recv(5);
    if (f && frame_seq(*f) < 900000) got.push_back(frame_seq(*f));
  }
  std::vector<uint32_t> want(kFrames);
  for (uint32_t i = 0; i < kFrames; ++i)
    want[i] = i;
  EXPECT_EQ(got, want);
  EXPECT_GE(net_->counters().tx_backend_full, 1u);
  EXPECT_EQ(net_->counters().tx_dropped_backend, 0u);
  EXPECT_TRUE(wait_until([&] { return !net_->tx_waiting_for_backend(); }));
}

TEST_F(NetFlowTest, ResetDropsTheHeldTxFrameAndCountsIt) {
  make(base_config());
  init_driver();
  UniqueFd filler;
  const uint32_t queued = fill_peer_queue(peer_path_, filler);
  send_tx(test_frame(7));
  ASSERT_TRUE(net_->tx_waiting_for_backend());
  wr(MmioReg::kStatus, 0);  // driver reset
  EXPECT_FALSE(net_->tx_waiting_for_backend());
  EXPECT_EQ(net_->counters().tx_dropped_reset, 1u);
  for (uint32_t i = 0; i < queued; ++i)
    ASSERT_TRUE(peer_recv(1000));
  init_driver();
  send_tx(test_frame(8));
  auto f = peer_recv(1000);
  ASSERT_TRUE(f);
  EXPECT_EQ(frame_seq(*f), 8u);
}

}  // namespace
}  // namespace carapace::net::test
