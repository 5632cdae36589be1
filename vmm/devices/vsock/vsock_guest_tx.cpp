// virtio-vsock: packets from the guest (the tx queue, virtio 1.2 §5.10.6.4). Every chain is
// checked (docs/security.md #17), dispatched on its op and returned to the used ring with length 0.
#include <sys/socket.h>

#include "common/base/log.h"
#include "vmm/devices/vsock/vsock_device.h"

namespace carapace {

using vsock::Connection;
using State = vsock::Connection::State;

void VirtioVsock::process_tx_locked() {
  virtio::Queue& q = ctx_->queues[kTxQueue];
  tx_stalled_ = false;
  do {
    for (;;) {
      // Each packet may owe the guest one RST; with no room for it, leave the rest of the ring
      // until rx buffers drain what is queued (virtio 1.2 §5.10.6.1).
      if (pending_rst_.size() >= opts_.max_pending_rst) {
        tx_stalled_ = true;
        break;
      }
      std::optional<virtio::DescriptorChain> chain;
      if (!pop_chain_locked(kTxQueue, &chain)) return;
      if (!chain) break;
      auto reader = chain->reader();
      if (reader.available() < vsock::kHeaderSize) {
        // Not even a header: nothing to answer to; drop it.
        ++stats_.bad_packets;
        ctx_->errors->bad_request.fetch_add(1, std::memory_order_relaxed);
      } else {
        auto h = reader.read_obj<Header>();
        if (h.ok()) handle_packet_locked(*h, reader);
      }
      (void)q.add_used(chain->head(), 0);
      if (broken_) return;
    }
    if (tx_stalled_) break;
  } while (q.enable_notification());
  if (q.needs_notification()) ctx_->signals->signal_used(kTxQueue);
}

void VirtioVsock::refuse_locked(const Header& h) {
  if (h.op == vsock::kOpRst) return;                         // never answer an RST with one
  if (pending_rst_.size() >= opts_.max_pending_rst) return;  // tx checks room first; be safe
  pending_rst_.push_back(vsock::rst_reply(h, guest_cid_));
}

void VirtioVsock::handle_packet_locked(const Header& h, virtio::ChainReader& payload) {
  const vsock::Check check = vsock::check_guest_header(h, guest_cid_, payload.available());
  Connection* c = find_by_ports_locked(h.dst_port, h.src_port);
  if (check.verdict != vsock::Verdict::kAccept) {
    ++stats_.bad_packets;
    ctx_->errors->bad_request.fetch_add(1, std::memory_order_relaxed);
    LOG_DEBUG("virtio-vsock: refused %s packet %u -> %u: %s", vsock::op_name(h.op), h.src_port,
              h.dst_port, check.why);
    if (check.verdict == vsock::Verdict::kDrop) return;
    // The RST names these ports, so whatever connection they designate is over on both sides.
    if (c != nullptr && c->state != State::kClosing)
      kill_locked(*c, /*rst=*/true);
    else if (c == nullptr)
      refuse_locked(h);
    return;
  }

  if (c != nullptr && c->state == State::kClosing) {  // our RST is on its way
    if (h.op == vsock::kOpRst) erase_locked(*c);
    return;
  }
  if (c != nullptr) {
    // virtio 1.2 §5.10.6.3: every packet of a connection carries its sender's credit.
    c->peer_buf_alloc = h.buf_alloc;
    c->peer_fwd_cnt = h.fwd_cnt;
    c->credit_requested = false;
  }

  if (h.op == vsock::kOpRequest) {
    if (c != nullptr) {  // a second REQUEST for a live connection: reset it
      kill_locked(*c, /*rst=*/true);
      return;
    }
    handle_request_locked(h);
    return;
  }
  if (h.op == vsock::kOpRst) {  // the guest ends (or refuses) the connection
    if (c != nullptr) handle_guest_rst_locked(*c);
    return;
  }
  if (c == nullptr) {  // anything else needs a connection (virtio 1.2 §5.10.6.5)
    refuse_locked(h);
    return;
  }

  if (c->state == State::kAwaitingResponse) {
    if (h.op != vsock::kOpResponse || c->send_request) {  // a reply to a REQUEST not yet sent
      const bool request_sent = !c->send_request;
      kill_locked(*c, /*rst=*/true);
      if (!request_sent) refuse_locked(h);
      return;
    }
    // The guest accepted: tell the host process, then the stream is open both ways.
    c->state = State::kEstablished;
    c->deadline_ns = 0;
    c->prefix = vsock::ok_line(c->local_port);
    if (c->host_writable && vsock::flush_to_host(*c) == vsock::Io::kClosed) {
      kill_locked(*c, /*rst=*/true);
      return;
    }
    schedule_rx_locked(*c);  // host bytes may already be waiting
    return;
  }
  if (c->state != State::kEstablished) return;

  switch (h.op) {
    case vsock::kOpResponse:  // only valid as the answer to our REQUEST
      kill_locked(*c, /*rst=*/true);
      return;
    case vsock::kOpRw:
      handle_rw_locked(*c, h, payload);
      return;
    case vsock::kOpShutdown:
      handle_shutdown_locked(*c, h.flags);
      return;
    case vsock::kOpCreditRequest:
      c->send_credit_update = true;
      schedule_rx_locked(*c);
      return;
    default:  // CREDIT_UPDATE: the credit was taken above
      if (connection_has_rx_work(*c)) schedule_rx_locked(*c);
      return;
  }
}

void VirtioVsock::handle_request_locked(const Header& h) {
  // docs/security.md #18: the cap counts every connection, in every state.
  if (conns_.size() >= opts_.max_connections) {
    ++stats_.refused_by_cap;
    LOG_DEBUG("virtio-vsock: connection cap (%zu) reached, refusing guest port %u",
              opts_.max_connections, h.src_port);
    refuse_locked(h);
    return;
  }
  connect_guest_request_locked(h);
}

void VirtioVsock::handle_rw_locked(Connection& c, const Header& h, virtio::ChainReader& payload) {
  if (c.peer_shutdown & vsock::kShutdownSend) {  // data after the guest said it would send none
    kill_locked(c, /*rst=*/true);
    return;
  }
  if (h.len == 0) return;
  // docs/security.md #17: more than the buffer space we advertised (credit violated). Holding it
  // would let a guest grow the VMM; the connection is reset instead.
  if (h.len > c.room_for_guest(opts_.buf_alloc)) {
    ++stats_.bad_packets;
    ctx_->errors->bad_request.fetch_add(1, std::memory_order_relaxed);
    LOG_DEBUG("virtio-vsock: %u -> %u sent %u bytes beyond its credit", c.peer_port, c.local_port,
              h.len);
    kill_locked(c, /*rst=*/true);
    return;
  }
  if (vsock::forward_to_host(c, payload, h.len) == vsock::Io::kClosed) {
    kill_locked(c, /*rst=*/true);
    return;
  }
  after_guest_data_locked(c);
}

void VirtioVsock::handle_shutdown_locked(Connection& c, uint32_t flags) {
  const uint32_t before = c.peer_shutdown;
  c.peer_shutdown |= flags & vsock::kShutdownBoth;
  // The guest will read no more: the host writer gets EPIPE rather than filling a dead buffer.
  if ((c.peer_shutdown & vsock::kShutdownRcv) && !(before & vsock::kShutdownRcv) && c.fd.valid())
    (void)::shutdown(c.fd.get(), SHUT_RD);
  after_guest_data_locked(c);
}

// virtio 1.2 §5.10.6.5: an RST from the guest ends the connection at once, both ways. Bytes the
// device already took from the guest (credit it spent, so sent as far as it knows) are still
// delivered: Linux's own transport does the same for a peer's RST (virtio_transport_do_close()
// leaves the receive queue readable; the reader gets the data, then EOF), as does a Unix stream
// whose writer dies. What the host socket cannot take now is written as it drains, for at most
// shutdown_timeout_ns. Nothing more is read from the host: the guest will never see it.
void VirtioVsock::handle_guest_rst_locked(Connection& c) {
  if (c.state == State::kEstablished && c.fd.valid() && !c.out.empty()) {
    const vsock::Io r = c.host_writable ? vsock::flush_to_host(c) : vsock::Io::kBlocked;
    if (r == vsock::Io::kBlocked) {
      start_draining_locked(c);
      return;
    }
  }
  kill_locked(c, /*rst=*/false);  // flushed (or the host side is gone): close now
}

void VirtioVsock::start_draining_locked(Connection& c) {
  auto it = by_ports_.find(c.key());
  if (it != by_ports_.end() && it->second == c.id) by_ports_.erase(it);
  c.state = State::kDraining;
  c.send_request = c.send_response = c.send_rst = c.send_credit_update = false;
  c.send_shutdown = 0;
  // The host writer gets EPIPE instead of filling a buffer nobody reads. The entry still counts
  // against max_connections, so the bytes held stay within cap x buf_alloc.
  (void)::shutdown(c.fd.get(), SHUT_RD);
  set_deadline_locked(c, opts_.shutdown_timeout_ns);
}

// After guest bytes moved (received, or flushed to the host): tell the guest about freed space,
// and carry out its shutdown once everything it sent has reached the host socket.
void VirtioVsock::after_guest_data_locked(Connection& c) {
  const bool flushed = c.out.empty() && c.prefix.empty();
  if ((c.peer_shutdown & vsock::kShutdownSend) && flushed && !c.host_shut_wr && c.fd.valid()) {
    (void)::shutdown(c.fd.get(), SHUT_WR);  // the host reader sees EOF
    c.host_shut_wr = true;
  }
  if (c.peer_shutdown == vsock::kShutdownBoth) {
    // virtio 1.2 §5.10.6.5: a clean disconnect ends with an RST from the peer. Wait (bounded)
    // for buffered bytes to reach the host first.
    if (flushed)
      kill_locked(c, /*rst=*/true);
    else if (c.deadline_ns == 0)
      set_deadline_locked(c, opts_.shutdown_timeout_ns);
    return;
  }
  // virtio 1.2 §5.10.6.3: the guest may only send what it believes fits; announce freed space
  // when a good part of the buffer came free or the guest is close to running out.
  const uint32_t unannounced = c.fwd_cnt - c.last_fwd_cnt_sent;
  if (unannounced == 0) return;
  const uint32_t believed_free = vsock::free_credit(opts_.buf_alloc, c.rx_cnt, c.last_fwd_cnt_sent);
  const uint32_t threshold = opts_.buf_alloc / 4;
  if (unannounced >= threshold || believed_free < threshold) {
    c.send_credit_update = true;
    schedule_rx_locked(c);
  }
}

}  // namespace carapace
