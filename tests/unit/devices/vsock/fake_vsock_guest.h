// A fake virtio-vsock driver on fake guest memory: three hand-built rings, rx buffers recycled
// like Linux's driver does, tx packets as a header descriptor plus a payload descriptor. Shared
// by the unit tests, the fuzzer and the benchmark. Not thread-safe; the device may run its host
// side on an event-loop thread (the rings are only touched under the device lock there).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "tests/unit/virtio/test_ring.h"
#include "vmm/devices/vsock/vsock_device.h"
#include "vmm/devices/vsock/vsock_packet.h"

namespace carapace::vsock::fake {

inline constexpr uint64_t kMemSize = 8ull << 20;
inline constexpr uint16_t kRingSize = 32;
inline constexpr uint64_t kSlot = 0x10100;  // a 64 KiB payload plus a header, rounded
inline constexpr uint64_t kRxBase = 0x100000, kTxBase = 0x400000, kEventBase = 0xa000;
inline constexpr uint16_t kTxSlots = kRingSize / 2;  // two descriptors per packet
inline constexpr uint16_t kEventBuffers = 4;

inline GuestMemory make_vsock_memory() {
  return std::move(GuestMemory::create_anonymous({{GuestAddress(0), kMemSize}})).value();
}

class RecordingSignals : public virtio::DeviceSignals {
 public:
  void signal_used(uint16_t queue) override {
    if (queue < 3) ++used[queue];
  }
  void signal_config_change() override { ++config_changes; }
  void report_needs_reset(const Error&) override { ++needs_reset; }
  std::atomic<int> used[3] = {0, 0, 0};
  std::atomic<int> config_changes{0};
  std::atomic<int> needs_reset{0};
};

struct Packet {
  Header hdr{};
  std::vector<uint8_t> payload;
  uint32_t used_len = 0;
};

class FakeVsockGuest {
 public:
  FakeVsockGuest(const GuestMemory& mem, uint64_t cid, uint32_t rx_buf_size = 4096 + kHeaderSize)
      : mem_(mem),
        cid_(cid),
        rx_buf_size_(rx_buf_size),
        rx_(mem, kRingSize, 0x1000, 0x2000, 0x3000),
        tx_(mem, kRingSize, 0x4000, 0x5000, 0x6000),
        ev_(mem, kEventBuffers, 0x7000, 0x8000, 0x9000) {}

  // Hands the device its queues (DRIVER_OK), then every rx and event buffer.
  Status activate(virtio::VirtioDevice& dev, bool give_rx = true) {
    dev_ = &dev;
    for (TestRingRef r : {&rx_, &tx_, &ev_})
      r->clear();
    rx_seen_ = rx_given_ = ev_seen_ = 0;
    tx_published_ = 0;
    inbox.clear();
    virtio::ActivationContext ctx;
    ctx.memory = &mem_;
    ctx.acked_features = virtio::kFVersion1;
    ctx.signals = &signals;
    ctx.errors = &errors;
    ctx.queues.push_back(rx_.activate(256));
    ctx.queues.push_back(tx_.activate(256));
    ctx.queues.push_back(ev_.activate(256));
    for (uint16_t i = 0; i < kEventBuffers; ++i) {
      ev_.set_desc(i, kEventBase + 16ull * i, 8, virtio::kDescFWrite);
      ev_.publish(i);
    }
    auto s = dev.activate(std::move(ctx));
    if (s.ok() && give_rx) give_rx_buffers(kRingSize);
    return s;
  }

  // Drives `dev` from now on, rings as they are (a device restored from a snapshot).
  void attach(virtio::VirtioDevice& dev) { dev_ = &dev; }
  // The guest's CID after a transport reset told it to read the configuration again.
  void set_cid(uint64_t cid) { cid_ = cid; }
  // The queues as plain data, as a running device would have them now.
  std::vector<virtio::QueueState> queue_states() const { return {rx_.state, tx_.state, ev_.state}; }

  // Publishes `n` more rx buffers (of rx_buf_size bytes each) and notifies.
  void give_rx_buffers(uint16_t n) {
    for (uint16_t i = 0; i < n && static_cast<uint16_t>(rx_given_ - rx_seen_) < kRingSize; ++i) {
      const uint16_t d = static_cast<uint16_t>(rx_given_ % kRingSize);
      rx_.set_desc(d, kRxBase + kSlot * d, rx_buf_size_, virtio::kDescFWrite);
      rx_.publish(d);
      ++rx_given_;
    }
    dev_->queue_notify(VirtioVsock::kRxQueue);
  }

  // A header from the guest: src = (cid, src_port), dst = (host, dst_port), our credit.
  Header hdr(uint16_t op, uint32_t src_port, uint32_t dst_port, uint32_t len = 0) const {
    Header h{};
    h.src_cid = cid_;
    h.dst_cid = kHostCid;
    h.src_port = src_port;
    h.dst_port = dst_port;
    h.len = len;
    h.type = kTypeStream;
    h.op = op;
    h.buf_alloc = buf_alloc;
    h.fwd_cnt = fwd_cnt;
    return h;
  }

  // Puts a packet on the tx queue and notifies. `h.len` is sent as given (tests lie with it);
  // the payload descriptor carries exactly `payload`. Returns false when the device left the tx
  // ring full (it stalls while it owes the guest RSTs): the caller should collect rx first.
  bool send(const Header& h, std::span<const uint8_t> payload = {}) {
    if (!tx_room()) return false;
    const uint16_t slot = static_cast<uint16_t>(tx_published_ % kTxSlots);
    const uint64_t base = kTxBase + kSlot * slot;
    (void)mem_.write_obj(GuestAddress(base), h);
    const uint16_t d = static_cast<uint16_t>(2 * slot);
    if (payload.empty()) {
      tx_.set_desc(d, base, kHeaderSize);
    } else {
      (void)mem_.write(GuestAddress(base + 64), payload);
      tx_.set_desc(d, base, kHeaderSize, virtio::kDescFNext, d + 1);
      tx_.set_desc(d + 1, base + 64, static_cast<uint32_t>(payload.size()));
    }
    tx_.publish(d);
    ++tx_published_;
    dev_->queue_notify(VirtioVsock::kTxQueue);
    return true;
  }
  // Header and payload in one descriptor, as some drivers lay them out.
  bool send_contiguous(const Header& h, std::span<const uint8_t> payload) {
    std::vector<uint8_t> bytes(kHeaderSize + payload.size());
    std::memcpy(bytes.data(), &h, kHeaderSize);
    if (!payload.empty()) std::memcpy(bytes.data() + kHeaderSize, payload.data(), payload.size());
    return send_raw(bytes);
  }
  // One readable descriptor with raw bytes (e.g. shorter than a header).
  bool send_raw(std::span<const uint8_t> bytes) {
    if (!tx_room()) return false;
    const uint16_t slot = static_cast<uint16_t>(tx_published_ % kTxSlots);
    const uint64_t base = kTxBase + kSlot * slot;
    (void)mem_.write(GuestAddress(base), bytes);
    tx_.set_desc(static_cast<uint16_t>(2 * slot), base, static_cast<uint32_t>(bytes.size()));
    tx_.publish(static_cast<uint16_t>(2 * slot));
    ++tx_published_;
    dev_->queue_notify(VirtioVsock::kTxQueue);
    return true;
  }
  bool tx_room() const { return static_cast<uint16_t>(tx_published_ - tx_.used_idx()) < kTxSlots; }
  uint16_t tx_completed() const { return tx_.used_idx(); }

  // Moves what the device put in the rx ring to `inbox`; with auto_refill gives each buffer
  // back (and notifies) as Linux does. Returns how many packets arrived.
  size_t poll_rx() {
    size_t got = 0;
    for (;;) {
      const uint16_t used = rx_.used_idx();
      if (used == rx_seen_) break;
      while (rx_seen_ != used) {
        const auto e = rx_.used(rx_seen_);
        Packet p;
        p.used_len = e.len;
        const uint64_t base = kRxBase + kSlot * (e.id % kRingSize);
        if (e.len >= kHeaderSize) {
          p.hdr = *mem_.read_obj<Header>(GuestAddress(base));
          const uint32_t n = std::min<uint32_t>(p.hdr.len, e.len - kHeaderSize);
          p.payload.resize(n);
          (void)mem_.read(GuestAddress(base + kHeaderSize), p.payload);
        }
        inbox.push_back(std::move(p));
        ++rx_seen_;
        ++got;
      }
      if (!auto_refill) break;
      give_rx_buffers(kRingSize);
    }
    return got;
  }
  std::optional<Packet> next() {
    poll_rx();
    if (inbox.empty()) return std::nullopt;
    Packet p = std::move(inbox.front());
    inbox.pop_front();
    return p;
  }

  // Event ids the device posted since the last call.
  std::vector<uint32_t> events() {
    std::vector<uint32_t> out;
    while (ev_seen_ != ev_.used_idx()) {
      const auto e = ev_.used(ev_seen_++);
      out.push_back(*mem_.read_obj<uint32_t>(GuestAddress(kEventBase + 16ull * e.id)));
    }
    return out;
  }
  // Gives the event buffers back.
  void refill_events() {
    for (uint16_t i = 0; i < kEventBuffers; ++i)
      ev_.publish(i);
    dev_->queue_notify(VirtioVsock::kEventQueue);
  }

  RecordingSignals signals;
  virtio::GuestErrorCounters errors;
  std::deque<Packet> inbox;
  bool auto_refill = true;
  uint32_t buf_alloc = 256 * 1024;  // what this guest advertises
  uint32_t fwd_cnt = 0;             // what it claims to have consumed

 private:
  using TestRingRef = virtio::fake::TestRing*;

  const GuestMemory& mem_;
  uint64_t cid_;
  uint32_t rx_buf_size_;
  virtio::fake::TestRing rx_, tx_, ev_;
  virtio::VirtioDevice* dev_ = nullptr;
  uint16_t rx_seen_ = 0, rx_given_ = 0, ev_seen_ = 0;
  uint16_t tx_published_ = 0;
};

}  // namespace carapace::vsock::fake
