#include "guest/testguest/virtio/vsock.h"

#include "guest/testguest/cpu.h"
#include "guest/testguest/virtio/dma.h"

namespace testguest::virtio {
namespace {

constexpr uint64_t kTxWait = kDeviceTimeout;  // for a free tx slot, in send_control/send_raw
constexpr uint32_t kHdr = sizeof(VsockHdr);

uint32_t round64(uint32_t n) {
  return (n + 63) & ~63u;
}

}  // namespace

const char* VsockStack::init(const DeviceInfo& info, uint16_t queue_size, uint32_t rx_payload,
                             uint32_t tx_payload, uint32_t buf_alloc, bool event_idx) {
  dev = Device(info);
  rx_payload_ = rx_payload;
  tx_payload_ = tx_payload;
  buf_alloc_ = buf_alloc;
  offered = dev.begin_init();
  features = dev.negotiate(offered, kVsockFStream | (event_idx ? kFEventIdx : 0));
  if (!features) return "virtio-vsock refused FEATURES_OK";
  Virtqueue* queues[3] = {&rx_, &tx_, &ev_};
  for (uint16_t i = 0; i < 3; ++i) {
    if (const char* e = queues[i]->setup(dev, i, i == 2 ? 4 : queue_size, features & kFEventIdx))
      return e;
  }
  if (!rx_bufs_) {
    rx_bufs_ =
        static_cast<uint8_t*>(dma_alloc(uint64_t{round64(kHdr + rx_payload)} * rx_.size(), 64));
    tx_bufs_ =
        static_cast<uint8_t*>(dma_alloc(uint64_t{round64(kHdr + tx_payload)} * tx_.size(), 64));
    events_ = static_cast<uint32_t*>(dma_alloc(4 * ev_.size(), 64));
    for (VsockConn& c : conns_)
      c.ring = static_cast<uint8_t*>(dma_alloc(buf_alloc, 64));
    if (!rx_bufs_ || !tx_bufs_ || !events_ || !conns_[kMaxConns - 1].ring)
      return "out of DMA memory";
  }
  for (VsockConn& c : conns_) {
    uint8_t* ring = c.ring;
    c = VsockConn{};
    c.ring = ring;
  }
  listen_count_ = 0;
  for (uint16_t i = 0; i < rx_.size(); ++i)
    post_rx(i);
  for (uint16_t i = 0; i < ev_.size(); ++i) {
    const Buf b = buf_in(&events_[i], 4);
    ev_.add(&b, 1);
  }
  dev.driver_ok();
  guest_cid = dev.config64(0);
  rx_.kick();
  ev_.kick();
  if (dev.status() & kStatusNeedsReset) return "DEVICE_NEEDS_RESET right after DRIVER_OK";
  return nullptr;
}

void VsockStack::post_rx(uint16_t buffer) {
  const uint32_t size = kHdr + rx_payload_;
  const Buf b = buf_in(rx_bufs_ + uint64_t{round64(size)} * buffer, size);
  const int head = rx_.add(&b, 1);
  if (head >= 0) rx_buffer_of_[head] = buffer;
}

void VsockStack::listen(uint32_t port) {
  if (listen_count_ < 4) listening_[listen_count_++] = port;
}

VsockConn* VsockStack::find(uint32_t local_port, uint32_t peer_port) {
  for (VsockConn& c : conns_) {
    if (c.state != VsockConn::kFree && c.local_port == local_port && c.peer_port == peer_port)
      return &c;
  }
  return nullptr;
}

VsockConn* VsockStack::alloc_conn() {
  for (VsockConn& c : conns_) {
    if (c.state == VsockConn::kFree || c.state == VsockConn::kClosed) {
      uint8_t* ring = c.ring;
      c = VsockConn{};
      c.ring = ring;
      return &c;
    }
  }
  return nullptr;
}

VsockHdr VsockStack::header(const VsockConn& c, uint16_t op, uint32_t len, uint32_t flags) {
  return VsockHdr{guest_cid,        kHostCid, c.local_port, c.peer_port, len,
                  kVsockTypeStream, op,       flags,        buf_alloc_,  c.fwd_cnt};
}

void VsockStack::reap_tx() {
  uint32_t head, len;
  while (tx_.pop_used(head, len)) {
  }
}

uint8_t* VsockStack::tx_slot(int head) const {
  return tx_bufs_ + uint64_t{round64(kHdr + tx_payload_)} * head;
}

int VsockStack::take_tx_slot() {
  reap_tx();
  uint16_t ids[1];
  return tx_.take_chain(1, ids);  // one descriptor: its id is the head
}

bool VsockStack::send_raw(const VsockHdr& h, const void* payload, uint32_t len) {
  if (len > tx_payload_) return false;
  Deadline deadline(kTxWait);
  int head;
  while ((head = take_tx_slot()) < 0) {
    if (deadline.expired()) return false;
    cpu_relax();
  }
  uint8_t* slot = tx_slot(head);
  copy_bytes(slot, &h, kHdr);
  if (len) copy_bytes(slot + kHdr, payload, len);
  tx_.desc(static_cast<uint16_t>(head)) = Desc{phys(slot), kHdr + len, 0, 0};
  tx_.push_avail(static_cast<uint16_t>(head));
  tx_.kick();
  return true;
}

bool VsockStack::send_control(VsockConn& c, uint16_t op, uint32_t flags) {
  if (!send_raw(header(c, op, 0, flags), nullptr, 0)) return false;
  c.fwd_cnt_sent = c.fwd_cnt;
  return true;
}

VsockConn* VsockStack::connect(uint32_t port) {
  VsockConn* c = alloc_conn();
  if (!c) return nullptr;
  c->state = VsockConn::kConnecting;
  c->local_port = next_port_++;
  c->peer_port = port;
  if (!send_control(*c, kOpRequest)) {
    c->state = VsockConn::kFree;
    return nullptr;
  }
  return c;
}

bool VsockStack::shutdown(VsockConn& c) {
  return send_control(c, kOpShutdown, kShutdownBoth);
}

void VsockStack::close(VsockConn& c) {
  if (c.state == VsockConn::kEstablished || c.state == VsockConn::kConnecting)
    send_control(c, kOpRst);
  c.state = VsockConn::kClosed;
}

uint32_t VsockStack::write(VsockConn& c, const void* buf, uint32_t n, bool batch) {
  if (c.state != VsockConn::kEstablished) return 0;
  const auto* bytes = static_cast<const uint8_t*>(buf);
  uint32_t sent = 0;
  bool queued = false;
  while (sent < n) {
    uint32_t chunk = n - sent;
    if (chunk > tx_payload_) chunk = tx_payload_;
    if (chunk > c.credit()) chunk = c.credit();
    if (chunk == 0) break;
    const int head = take_tx_slot();
    if (head < 0) break;
    uint8_t* slot = tx_slot(head);
    const VsockHdr h = header(c, kOpRw, chunk, 0);
    copy_bytes(slot, &h, kHdr);
    copy_bytes(slot + kHdr, bytes + sent, chunk);
    tx_.desc(static_cast<uint16_t>(head)) = Desc{phys(slot), kHdr + chunk, 0, 0};
    tx_.push_avail(static_cast<uint16_t>(head));
    c.tx_cnt += chunk;
    c.bytes_out += chunk;
    c.fwd_cnt_sent = c.fwd_cnt;
    sent += chunk;
    queued = true;
  }
  if (queued && !batch) tx_.kick();
  return sent;
}

uint32_t VsockStack::discard(VsockConn& c, uint32_t n) {
  if (n > c.ring_len) n = c.ring_len;
  c.ring_head = (c.ring_head + n) % buf_alloc_;
  c.ring_len -= n;
  c.fwd_cnt += n;
  // Tell the peer once a quarter of the ring is free again, so a sender never stalls for long.
  if (c.state == VsockConn::kEstablished && c.fwd_cnt - c.fwd_cnt_sent >= buf_alloc_ / 4)
    send_control(c, kOpCreditUpdate);
  return n;
}

uint32_t VsockStack::read(VsockConn& c, void* buf, uint32_t n) {
  if (n > c.ring_len) n = c.ring_len;
  auto* out = static_cast<uint8_t*>(buf);
  const uint32_t first = n < buf_alloc_ - c.ring_head ? n : buf_alloc_ - c.ring_head;
  copy_bytes(out, c.ring + c.ring_head, first);
  copy_bytes(out + first, c.ring, n - first);
  return discard(c, n);
}

VsockConn* VsockStack::accepted() {
  for (VsockConn& c : conns_) {
    if (c.unclaimed) {
      c.unclaimed = false;
      return &c;
    }
  }
  return nullptr;
}

VsockConn* VsockStack::accept_within(uint64_t timeout) {
  Deadline deadline(timeout);
  VsockConn* c;
  while (!(c = accepted())) {
    if (deadline.expired()) return nullptr;
    poll();
    cpu_relax();
  }
  return c;
}

void VsockStack::handle(const VsockHdr& h, const uint8_t* payload, uint32_t len) {
  VsockConn* c = find(h.dst_port, h.src_port);
  if (!c || c->state == VsockConn::kClosed) {
    if (h.op == kOpRequest) {
      for (int i = 0; i < listen_count_; ++i) {
        if (listening_[i] != h.dst_port) continue;
        VsockConn* n = alloc_conn();
        if (!n) break;
        n->local_port = h.dst_port;
        n->peer_port = h.src_port;
        n->peer_buf_alloc = h.buf_alloc;
        n->peer_fwd_cnt = h.fwd_cnt;
        n->state = VsockConn::kEstablished;
        send_control(*n, kOpResponse);
        n->unclaimed = true;
        return;
      }
    }
    if (h.op == kOpRst) {
      ++rst_received;
      return;  // never answer an RST with an RST
    }
    ++unknown_packets;
    VsockConn stray{};
    stray.local_port = h.dst_port;
    stray.peer_port = h.src_port;
    send_control(stray, kOpRst);
    return;
  }
  // Every packet carries the peer's current credit (virtio 1.2 §5.10.6.3).
  c->peer_buf_alloc = h.buf_alloc;
  c->peer_fwd_cnt = h.fwd_cnt;
  switch (h.op) {
    case kOpResponse:
      if (c->state == VsockConn::kConnecting) c->state = VsockConn::kEstablished;
      break;
    case kOpRst:
      if (c->state == VsockConn::kConnecting) c->refused = true;
      c->state = VsockConn::kClosed;
      break;
    case kOpShutdown:
      c->peer_shutdown = true;
      break;
    case kOpRw: {
      // The peer may not send more than our buffer (credit); anything beyond is dropped.
      const uint32_t room = buf_alloc_ - c->ring_len;
      if (len > room) len = room;
      const uint32_t tail = (c->ring_head + c->ring_len) % buf_alloc_;
      const uint32_t first = len < buf_alloc_ - tail ? len : buf_alloc_ - tail;
      copy_bytes(c->ring + tail, payload, first);
      copy_bytes(c->ring, payload + first, len - first);
      c->ring_len += len;
      c->bytes_in += len;
      break;
    }
    case kOpCreditRequest:
      send_control(*c, kOpCreditUpdate);
      break;
    default:  // credit updates only carry the fields read above
      break;
  }
}

bool VsockStack::poll() {
  bool any = false;
  reap_tx();
  uint32_t head, used;
  bool reposted = false;
  while (rx_.pop_used(head, used)) {
    any = true;
    if (head >= rx_.size()) {
      ++rx_bad;
      continue;
    }
    const uint16_t buffer = rx_buffer_of_[head];
    const uint8_t* p = rx_bufs_ + uint64_t{round64(kHdr + rx_payload_)} * buffer;
    VsockHdr h;
    copy_bytes(&h, p, kHdr);
    if (used < kHdr || used > kHdr + rx_payload_ || h.len != used - kHdr) {
      ++rx_bad;
    } else {
      handle(h, p + kHdr, h.len);
    }
    post_rx(buffer);
    reposted = true;
  }
  if (reposted) rx_.kick();
  // Events (virtio 1.2 §5.10.6.6): TRANSPORT_RESET (id 0), sent after the VM was restored from
  // a snapshot. Every connection is gone (the host side did not survive) and the guest CID may
  // have changed: drop the connections, keep the listening ports, re-read the CID.
  while (ev_.pop_used(head, used)) {
    if (head < ev_.size()) {
      if (used >= 4 && events_[head] == kEventTransportReset) {
        ++transport_resets;
        for (VsockConn& c : conns_) {
          uint8_t* ring = c.ring;
          c = VsockConn{};
          c.ring = ring;
        }
        guest_cid = dev.config64(0);
        any = true;
      }
      const Buf b = buf_in(&events_[head], 4);
      ev_.add(&b, 1);
      ev_.kick();
    }
  }
  return any;
}

}  // namespace testguest::virtio
