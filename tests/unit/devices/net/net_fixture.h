// A test fixture for virtio-net: the device built by make_net_device with the Unix datagram
// backend, a real peer socket playing the host side of the wire, and an MmioTransport driven the
// way Linux's virtio_net driver drives it (queue 0 RX, queue 1 TX, 12-byte headers).
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/devices/net/frame_builder.h"
#include "tests/unit/virtio/mmio_access.h"
#include "tests/unit/virtio/test_ring.h"
#include "vmm/devices/net/net_device.h"
#include "vmm/devices/net/net_factory.h"
#include "vmm/devices/net/unix_backend.h"
#include "vmm/virtio/mmio_transport.h"

namespace carapace::net::test {

using namespace virtio;
using namespace virtio::fake;

inline constexpr uint64_t kMmioBase = 0xd0000000;
inline constexpr uint16_t kRingSize = 16;
// Queue 1's rings, clear of queue 0's (which uses TestRing's defaults).
inline constexpr uint64_t kTxDesc = 0x50000, kTxAvail = 0x51000, kTxUsed = 0x52000;
// RX buffers: 16 x 4 KiB in region 0. TX buffers: 16 x 128 KiB in region 1 (room for oversized
// frames).
inline constexpr uint64_t kRxBuffers = 0x100000, kRxSlot = 0x1000;
inline constexpr uint64_t kTxBuffers = 0x400000, kTxSlot = 0x20000;
inline constexpr uint32_t kRxBufferLen = 1526;  // virtio 1.2 §5.1.6.3.1: 12 + 1514

// The next datagram or packet on `fd`, waiting up to `ms`; large enough for any frame.
inline std::optional<Bytes> recv_frame(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, ms) <= 0) return std::nullopt;
  Bytes buf(70000);
  ssize_t n = ::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
  if (n < 0) return std::nullopt;
  buf.resize(static_cast<size_t>(n));
  return buf;
}

// Polls `pred` every millisecond for up to `ms`.
inline bool wait_until(const std::function<bool()>& pred, int ms = 3000) {
  for (int i = 0; i < ms; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return pred();
}

// A frame of `len` bytes with a local experimental ethertype and `seq` in its first payload
// bytes, so order and loss can be checked.
inline Bytes test_frame(uint32_t seq, size_t len = 64) {
  Bytes f(len < 18 ? 18 : len, 0);
  for (size_t i = 0; i < 6; ++i)
    f[i] = 0xff;
  f[6] = 0x02;
  f[12] = 0x88, f[13] = 0xb5;
  std::memcpy(&f[14], &seq, 4);
  for (size_t i = 18; i < f.size(); ++i)
    f[i] = static_cast<uint8_t>(i * 7 + seq);
  f.resize(len);
  return f;
}
inline uint32_t frame_seq(const Bytes& f) {
  uint32_t seq = 0;
  if (f.size() >= 18) std::memcpy(&seq, &f[14], 4);
  return seq;
}

class NetFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cpnet-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    peer_path_ = dir_ + "/wire";
    peer_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(peer_, 0);
    sockaddr_un a = addr(peer_path_);
    ASSERT_EQ(::bind(peer_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    int big = 4 << 20;
    (void)::setsockopt(peer_, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    (void)::setsockopt(peer_, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  }
  void TearDown() override {
    t_.reset();
    net_.reset();
    dev_.reset();
    if (loop_) loop_->stop();
    loop_.reset();
    if (peer_ >= 0) ::close(peer_);
    ::unlink(peer_path_.c_str());
    ::unlink(UnixDatagramBackend::local_path(peer_path_).c_str());
    ::rmdir(dir_.c_str());
  }

  static sockaddr_un addr(const std::string& path) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    return a;
  }

  NetDeviceConfig base_config() const {
    NetDeviceConfig c;
    c.backend = NetDeviceConfig::Backend::kUnixDatagram;
    c.unix_path = peer_path_;
    c.mac = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
    c.mac_set = true;
    return c;
  }

  // Builds the device (and, with `with_loop`, a running event loop) and its transport.
  void make(const NetDeviceConfig& config, bool with_loop = false) {
    auto loop = EventLoop::create();
    ASSERT_TRUE(loop.ok());
    loop_ = std::move(loop).value();
    if (with_loop) loop_->start_thread();
    auto dev = make_net_device(config, *loop_);
    ASSERT_TRUE(dev.ok()) << dev.error().describe();
    dev_ = *dev;
    net_ = std::dynamic_pointer_cast<NetDevice>(dev_);
    ASSERT_NE(net_, nullptr);
    t_ = std::move(
             MmioTransport::create(dev_, mem_, &irq_, with_loop ? loop_.get() : nullptr, kMmioBase))
             .value();
  }

  // ---- the driver (virtio_net.c's order: reset, features, queues, DRIVER_OK) ----
  uint32_t rd(MmioReg r) { return mmio_read32(*t_, r); }
  void wr(MmioReg r, uint32_t v) { mmio_write32(*t_, r, v); }
  std::vector<uint8_t> read_config(uint64_t off, size_t len) {
    std::vector<uint8_t> out(len);
    t_->read(offset_of(MmioReg::kConfig) + off, out);
    return out;
  }
  void setup_queue(uint32_t index, const TestRing& ring) { mmio_set_queue(*t_, index, ring); }
  void init_driver(uint64_t features = kFVersion1 | kFEventIdx | NetDevice::kFeatures) {
    rx_.clear();
    tx_.clear();
    rx_posted_ = rx_seen_ = tx_sent_ = 0;
    wr(MmioReg::kStatus, 0);
    wr(MmioReg::kStatus, kAcknowledge);
    wr(MmioReg::kStatus, kAcknowledge | kDriver);
    wr(MmioReg::kDriverFeaturesSel, 1);
    wr(MmioReg::kDriverFeatures, static_cast<uint32_t>(features >> 32));
    wr(MmioReg::kDriverFeaturesSel, 0);
    wr(MmioReg::kDriverFeatures, static_cast<uint32_t>(features));
    wr(MmioReg::kStatus, kAcknowledge | kDriver | kFeaturesOk);
    setup_queue(0, rx_);
    setup_queue(1, tx_);
    wr(MmioReg::kStatus, kAcknowledge | kDriver | kFeaturesOk | kDriverOk);
    ASSERT_EQ(rd(MmioReg::kStatus), kAcknowledge | kDriver | kFeaturesOk | kDriverOk);
  }
  void notify(uint32_t q) { wr(MmioReg::kQueueNotify, q); }

  // Makes `n` RX buffers of `len` bytes available (slots reused in order, as the device
  // completes RX buffers in order).
  void post_rx(int n, uint32_t len = kRxBufferLen) {
    for (int i = 0; i < n; ++i) {
      const uint16_t head = static_cast<uint16_t>(rx_posted_ % kRingSize);
      rx_.fill(kRxBuffers + head * kRxSlot, 0xee, kRxSlot);
      rx_.set_desc(head, kRxBuffers + head * kRxSlot, len, kDescFWrite);
      rx_.publish(head);
      ++rx_posted_;
    }
  }
  // Frames the device completed since the last call (header checked and stripped).
  std::vector<Bytes> take_rx() {
    std::vector<Bytes> out;
    const uint16_t used = rx_.used_idx();
    while (rx_seen_ != used) {
      const UsedElem e = rx_.used(rx_seen_++);
      EXPECT_LT(e.id, kRingSize);
      if (e.len == 0) {
        out.push_back({});
        continue;
      }
      EXPECT_GE(e.len, kVnetHdrLen);
      Bytes all = rx_.bytes(kRxBuffers + e.id * kRxSlot, e.len);
      VirtioNetHdr hdr;
      std::memcpy(&hdr, all.data(), sizeof hdr);
      EXPECT_EQ(hdr.num_buffers, 1);
      EXPECT_EQ(hdr.flags, 0);
      EXPECT_EQ(hdr.gso_type, kGsoNone);
      out.emplace_back(all.begin() + kVnetHdrLen, all.end());
    }
    return out;
  }
  uint16_t rx_used() const { return rx_.used_idx(); }

  // Queues one TX chain: the 12-byte header and the frame in two descriptors (as Linux does
  // without ANY_LAYOUT), or in one with `one_desc`. Slot s uses descriptors 2s and 2s + 1.
  void queue_tx_raw(const Bytes& payload_after_header, bool one_desc = false,
                    size_t header_len = kVnetHdrLen) {
    const uint16_t slot = static_cast<uint16_t>(tx_sent_ % (kRingSize / 2));
    const uint16_t head = static_cast<uint16_t>(2 * slot);
    const uint64_t base = kTxBuffers + slot * kTxSlot;
    Bytes hdr(header_len, 0);
    if (header_len >= 1) hdr[0] = kHdrFNeedsCsum;  // ignored: not negotiated
    (void)mem_.write(GuestAddress(base), hdr);
    (void)mem_.write(GuestAddress(base + 0x1000), payload_after_header);
    if (one_desc || payload_after_header.empty()) {
      Bytes all = hdr;
      all.insert(all.end(), payload_after_header.begin(), payload_after_header.end());
      (void)mem_.write(GuestAddress(base), all);
      tx_.set_desc(head, base, static_cast<uint32_t>(all.size()), 0);
    } else {
      tx_.set_desc(head, base, static_cast<uint32_t>(header_len), kDescFNext,
                   static_cast<uint16_t>(head + 1));
      tx_.set_desc(static_cast<uint16_t>(head + 1), base + 0x1000,
                   static_cast<uint32_t>(payload_after_header.size()), 0);
    }
    tx_.publish(head);
    ++tx_sent_;
  }
  void send_tx(const Bytes& frame, bool one_desc = false) {
    queue_tx_raw(frame, one_desc);
    notify(1);
  }
  uint16_t tx_used() const { return tx_.used_idx(); }

  // ---- the host side of the wire ----
  void peer_send(const Bytes& frame) {
    sockaddr_un a = addr(UnixDatagramBackend::local_path(peer_path_));
    ASSERT_EQ(
        ::sendto(peer_, frame.data(), frame.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof a),
        static_cast<ssize_t>(frame.size()))
        << std::strerror(errno);
  }
  // Non-blocking send; false when the device's socket queue is full (EAGAIN).
  bool peer_try_send(const Bytes& frame) {
    sockaddr_un a = addr(UnixDatagramBackend::local_path(peer_path_));
    return ::sendto(peer_, frame.data(), frame.size(), MSG_DONTWAIT,
                    reinterpret_cast<sockaddr*>(&a), sizeof a) >= 0;
  }
  // The next frame the device sent, waiting up to `ms`.
  std::optional<Bytes> peer_recv(int ms = 0) { return recv_frame(peer_, ms); }

  GuestMemory mem_ = make_memory();
  TestRing rx_{mem_, kRingSize};
  TestRing tx_{mem_, kRingSize, kTxDesc, kTxAvail, kTxUsed};
  CountingIrq irq_;
  std::string dir_, peer_path_;
  int peer_ = -1;
  std::unique_ptr<EventLoop> loop_;
  std::shared_ptr<VirtioDevice> dev_;
  std::shared_ptr<NetDevice> net_;
  std::shared_ptr<MmioTransport> t_;
  uint32_t rx_posted_ = 0;
  uint16_t rx_seen_ = 0;
  uint32_t tx_sent_ = 0;
};

}  // namespace carapace::net::test
