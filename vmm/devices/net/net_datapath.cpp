// The two virtqueues of virtio-net (virtio 1.2 §5.1.6): transmit (guest → backend) and receive
// (backend → guest). See net_device.h for the flow-control design.
#include "vmm/devices/net/net_device.h"

#include <sys/epoll.h>

namespace carapace::net {

// ---- TX (virtio 1.2 §5.1.6.2) ----

void NetDevice::process_tx_locked() {
  if (!ctx_ || broken_ || tx_throttled_) return;
  // The frame the backend refused goes first; while it still does not fit, the ring waits.
  if (tx_held_ != 0 && !send_held_locked()) return;
  virtio::Queue& q = ctx_->queues[kTxQueue];
  // Without an event loop (tests) there is nobody to yield to and no timer to come back on.
  size_t budget = timer_registered_ ? kBudget : SIZE_MAX;
  bool yielded = false, backend_full = false;
  do {
    for (;;) {
      if (budget == 0) {
        yielded = true;
        break;
      }
      auto next = q.pop();
      if (!next.ok()) {  // a corrupt ring: stop until the driver resets us
        go_broken_locked(next.error());
        return;
      }
      if (!next->has_value()) break;
      --budget;
      const virtio::DescriptorChain& chain = **next;
      const size_t readable = chain.readable_bytes();
      const size_t frame_len = readable > kVnetHdrLen ? readable - kVnetHdrLen : 0;
      const uint64_t now = tx_limiter_.unlimited() ? 0 : RateLimiter::now_ns();
      if (!tx_limiter_.admit(frame_len, now)) {
        // The chain stays in the ring; the guest's TX ring fills and it stops sending.
        q.undo_pop();
        tx_throttled_ = true;
        bump(counters_.tx_throttled);
        schedule_timer_locked(tx_limiter_.wait_ns(frame_len, now));
        break;
      }
      backend_full = !transmit_locked(chain);
      // TX buffers are driver-readable only: nothing written (virtio 1.2 §2.7.8). A held frame
      // was copied out, so its chain goes back too.
      (void)q.add_used(chain.head(), 0);
      if (backend_full) break;
    }
    // A full backend brings us back through EPOLLOUT (or, without a loop, the next notify).
    if (yielded || tx_throttled_ || backend_full) break;
  } while (q.enable_notification());
  if (yielded) schedule_timer_locked(1);
  if (q.needs_notification()) ctx_->signals->signal_used(kTxQueue);
}

bool NetDevice::transmit_locked(const virtio::DescriptorChain& chain) {
  auto reader = chain.reader();
  if (reader.available() < kVnetHdrLen) {  // not even the header (virtio 1.2 §5.1.6)
    ctx_->errors->bad_request.fetch_add(1, std::memory_order_relaxed);
    bump(counters_.tx_dropped_bad_header);
    return true;
  }
  // No offload was negotiated, so the header asks for nothing we would honour (virtio 1.2
  // §5.1.6.2); it is skipped and never passed on: the backend gets a header of our own.
  (void)reader.skip(kVnetHdrLen);
  const size_t len = reader.available();
  if (len > kMaxFrameLen) {
    bump(counters_.tx_dropped_oversized);
    return true;
  }
  if (len < kEthHeaderLen) {
    bump(counters_.tx_dropped_runt);
    return true;
  }
  // Copy first: the policy must judge the bytes that are sent, not guest memory that another
  // vCPU can rewrite between the check and the send.
  std::span<uint8_t> frame(tx_frame_.data(), len);
  if (!reader.read(frame).ok()) {  // cannot happen: the chain was validated whole
    ctx_->errors->bad_request.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (egress_policy_) {
    const EgressVerdict v = check_egress(frame, allow_);
    if (v != EgressVerdict::kAllow) {
      bump(counters_.tx_dropped_policy[static_cast<size_t>(v)]);
      return true;
    }
  }
  auto sent = backend_->send(frame);
  if (!sent.ok() && would_block(sent.error())) {
    // The host side is full (a Unix datagram peer's queue holds only a few frames): keep this
    // one and push back on the guest rather than lose it; EPOLLOUT resumes us.
    tx_held_ = len;
    bump(counters_.tx_backend_full);
    set_backend_events_locked(backend_events_ | EPOLLOUT);
    return false;
  }
  count_sent_locked(sent, len);
  return true;
}

bool NetDevice::send_held_locked() {
  auto sent = backend_->send({tx_frame_.data(), tx_held_});
  if (!sent.ok() && would_block(sent.error())) {
    set_backend_events_locked(backend_events_ | EPOLLOUT);  // (re-)armed, e.g. after a reset
    return false;
  }
  count_sent_locked(sent, tx_held_);
  tx_held_ = 0;
  set_backend_events_locked(backend_events_ & ~uint32_t{EPOLLOUT});
  return true;
}

void NetDevice::count_sent_locked(const Status& sent, size_t len) {
  if (!sent.ok()) {
    bump(counters_.tx_dropped_backend);
    warn_locked("TX frame dropped", sent.error());
    return;
  }
  bump(counters_.tx_frames);
  bump(counters_.tx_bytes, len);
}

// ---- RX (virtio 1.2 §5.1.6.3, §5.1.6.4) ----

void NetDevice::process_rx_locked() {
  if (!ctx_ || broken_ || rx_throttled_) return;
  virtio::Queue& q = ctx_->queues[kRxQueue];
  size_t budget = loop_ != nullptr ? kBudget : SIZE_MAX;
  for (;;) {
    if (rx_pending_ == 0) {
      if (budget == 0) {
        // Yield: the backend fd is level-triggered, so the loop calls us again after the others.
        arm_rx_locked();
        break;
      }
      --budget;
      const RxRead r = read_backend_locked();
      if (r == RxRead::kDrained) {
        arm_rx_locked();
        break;
      }
      if (r == RxRead::kFailed) {
        // Stop watching a broken backend (a TAP that lost its interface reports EPOLLERR for
        // ever); the guest's next RX notify tries again.
        disarm_rx_locked();
        break;
      }
      if (r == RxRead::kDropped) continue;
    }
    auto next = q.pop();
    if (!next.ok()) {
      go_broken_locked(next.error());
      return;
    }
    if (!next->has_value()) {
      if (q.enable_notification()) continue;  // buffers arrived meanwhile
      // No buffer: keep the one frame, stop reading the backend, and wait for the driver's
      // notify (enable_notification asked for it). docs/security.md #16.
      if (!rx_waiting_) bump(counters_.rx_ring_full);  // a timer re-check is not a new pause
      rx_waiting_ = true;
      disarm_rx_locked();
      break;
    }
    if (!deliver_locked(q, **next)) break;  // throttled
  }
  if (q.needs_notification()) ctx_->signals->signal_used(kRxQueue);
}

NetDevice::RxRead NetDevice::read_backend_locked() {
  auto r = backend_->receive({rx_frame_.data(), rx_frame_.size()});
  if (!r.ok()) {
    bump(counters_.rx_backend_errors);
    warn_locked("RX from the backend failed", r.error());
    return RxRead::kFailed;
  }
  switch (r->kind) {
    case RecvResult::Kind::kEmpty:
      return RxRead::kDrained;
    case RecvResult::Kind::kInvalid:
      bump(counters_.rx_dropped_invalid);
      return RxRead::kDropped;
    case RecvResult::Kind::kFrame:
      break;
  }
  if (r->len > kMaxFrameLen) {
    bump(counters_.rx_dropped_oversized);
    return RxRead::kDropped;
  }
  if (r->len < kEthHeaderLen) {
    bump(counters_.rx_dropped_runt);
    return RxRead::kDropped;
  }
  rx_pending_ = r->len;
  return RxRead::kGot;
}

bool NetDevice::deliver_locked(virtio::Queue& q, const virtio::DescriptorChain& chain) {
  const size_t len = rx_pending_;
  if (chain.writable_bytes() < kVnetHdrLen) {
    // A buffer that cannot hold even the header can never be used: the driver's mistake.
    ctx_->errors->bad_request.fetch_add(1, std::memory_order_relaxed);
    bump(counters_.rx_bad_buffer);
    (void)q.add_used(chain.head(), 0);
    return true;
  }
  if (chain.writable_bytes() < kVnetHdrLen + len) {
    // Without VIRTIO_NET_F_MRG_RXBUF a frame must fit one chain (virtio 1.2 §5.1.6.4): drop the
    // frame and keep the buffer for the next one.
    bump(counters_.rx_dropped_no_room);
    rx_pending_ = 0;
    q.undo_pop();
    return true;
  }
  const uint64_t now = rx_limiter_.unlimited() ? 0 : RateLimiter::now_ns();
  if (!rx_limiter_.admit(len, now)) {
    // Keep the frame and the buffer; stop reading until the timer (or a notify) says go.
    q.undo_pop();
    rx_throttled_ = true;
    bump(counters_.rx_throttled);
    disarm_rx_locked();
    schedule_timer_locked(rx_limiter_.wait_ns(len, now));
    return false;
  }
  VirtioNetHdr hdr{};
  hdr.num_buffers = 1;  // virtio 1.2 §5.1.6.4: 1 when MRG_RXBUF is not negotiated
  auto writer = chain.writer();
  if (!writer.write_obj(hdr).ok() || !writer.write({rx_frame_.data(), len}).ok()) {
    ctx_->errors->bad_request.fetch_add(1, std::memory_order_relaxed);  // cannot happen
    (void)q.add_used(chain.head(), 0);
    return true;
  }
  rx_pending_ = 0;
  bump(counters_.rx_frames);  // before the guest can see the frame
  bump(counters_.rx_bytes, len);
  (void)q.add_used(chain.head(), static_cast<uint32_t>(writer.bytes_written()));
  return true;
}

}  // namespace carapace::net
