// virtio-vsock: packets to the guest (the rx queue, virtio 1.2 §5.10.6.4). The device owes the
// guest RSTs for packets that named no connection (pending_rst_) and, per connection, control
// packets and host data (rx_list_, served round-robin). Host bytes go straight from the Unix
// socket into the guest's buffer, never more than the guest's credit allows.
#include <algorithm>

#include "vmm/devices/vsock/vsock_device.h"

namespace carapace {

using vsock::Connection;
using State = vsock::Connection::State;

namespace {

// Host bytes the device would read for the guest now, credit permitting.
bool wants_to_read(const Connection& c) {
  return c.fd.valid() && c.host_readable && !c.host_eof && !(c.peer_shutdown & vsock::kShutdownRcv);
}

}  // namespace

void VirtioVsock::process_rx_locked() {
  virtio::Queue& q = ctx_->queues[kRxQueue];
  while (has_rx_work_locked()) {
    std::optional<virtio::DescriptorChain> chain;
    if (!pop_chain_locked(kRxQueue, &chain)) return;
    if (!chain) {  // out of buffers: ask to be notified when the driver adds one
      if (q.enable_notification()) continue;
      break;
    }
    auto w = chain->writer();
    if (w.available() < vsock::kHeaderSize) {  // cannot hold a packet: return it empty
      ctx_->errors->bad_request.fetch_add(1, std::memory_order_relaxed);
      (void)q.add_used(chain->head(), 0);
      continue;
    }
    const uint32_t len = fill_rx_packet_locked(w);
    if (len == 0) {  // nothing to send after all (e.g. the socket had no data)
      q.undo_pop();
      break;
    }
    (void)q.add_used(chain->head(), len);
  }
  if (q.needs_notification()) ctx_->signals->signal_used(kRxQueue);
}

bool VirtioVsock::has_rx_work_locked() const {
  return !pending_rst_.empty() || !rx_list_.empty();
}

bool VirtioVsock::connection_has_rx_work(const Connection& c) const {
  if (c.send_rst) return true;
  if (c.state == State::kAwaitingResponse) return c.send_request && !holding_requests_locked();
  if (c.state != State::kEstablished) return false;
  if (c.send_response || c.send_shutdown != 0 || c.send_credit_update) return true;
  // Host data: sent when the guest has credit, else one CREDIT_REQUEST.
  return wants_to_read(c) && (c.peer_credit() > 0 || !c.credit_requested);
}

uint32_t VirtioVsock::fill_rx_packet_locked(virtio::ChainWriter& w) {
  if (!pending_rst_.empty()) {
    if (!w.write_obj(pending_rst_.front()).ok()) return 0;
    pending_rst_.pop_front();
    ++stats_.rst_sent;
    return vsock::kHeaderSize;
  }
  // Each listed connection gets one try at this buffer: one that cannot use it (data but a
  // buffer with room only for a header) goes to the back and the buffer waits.
  for (size_t tries = rx_list_.size(); tries > 0 && !rx_list_.empty(); --tries) {
    const uint64_t id = rx_list_.front();
    rx_list_.pop_front();
    Connection* c = find_locked(id);
    if (c == nullptr) continue;  // ended since it was scheduled
    c->in_rx_list = false;
    bool erase = false;
    const uint32_t len = write_connection_packet_locked(*c, w, &erase);
    if (erase)
      erase_locked(*c);
    else if (connection_has_rx_work(*c))
      schedule_rx_locked(*c);  // to the back of the list: round-robin between connections
    if (len > 0) return len;
  }
  return 0;
}

uint32_t VirtioVsock::write_connection_packet_locked(Connection& c, virtio::ChainWriter& w,
                                                     bool* erase) {
  auto control = [&](uint16_t op, uint32_t flags = 0) -> uint32_t {
    Header h =
        vsock::host_header(guest_cid_, c.local_port, c.peer_port, op, opts_.buf_alloc, c.fwd_cnt);
    h.flags = flags;
    if (!w.write_obj(h).ok()) return 0;  // the caller checked room for a header
    c.last_fwd_cnt_sent = c.fwd_cnt;     // every packet tells the guest our credit
    c.send_credit_update = false;
    return vsock::kHeaderSize;
  };
  auto rst = [&]() -> uint32_t {
    c.send_rst = false;
    *erase = true;
    ++stats_.rst_sent;
    return control(vsock::kOpRst);
  };

  if (c.send_rst) return rst();
  if (c.state == State::kAwaitingResponse && c.send_request) {
    if (holding_requests_locked()) return 0;  // scheduled again once the reset is taken
    c.send_request = false;
    return control(vsock::kOpRequest);
  }
  if (c.state != State::kEstablished) return 0;
  if (c.send_response) {
    c.send_response = false;
    return control(vsock::kOpResponse);
  }
  if (wants_to_read(c) && c.peer_credit() > 0) {
    const uint32_t len = write_data_packet_locked(c, w);
    if (len > 0) return len;
    if (c.send_rst) return rst();  // the host socket failed
  }
  if (c.send_shutdown != 0) {
    const uint32_t flags = c.send_shutdown;
    c.send_shutdown = 0;
    c.shutdown_sent |= flags;
    // virtio 1.2 §5.10.6.5: the guest should answer with an RST; if it does not, reset.
    if (c.shutdown_sent == vsock::kShutdownBoth) set_deadline_locked(c, opts_.shutdown_timeout_ns);
    return control(vsock::kOpShutdown, flags);
  }
  if (c.send_credit_update) return control(vsock::kOpCreditUpdate);
  if (wants_to_read(c) && c.peer_credit() == 0 && !c.credit_requested) {
    // Host data waits and the guest has no room: ask it to tell us when it has.
    c.credit_requested = true;
    return control(vsock::kOpCreditRequest);
  }
  return 0;
}

uint32_t VirtioVsock::write_data_packet_locked(Connection& c, virtio::ChainWriter& w) {
  virtio::ChainWriter head = w;
  auto rest = head.split_at(vsock::kHeaderSize);
  if (!rest.ok()) return 0;
  // Never more than the guest's free credit (virtio 1.2 §5.10.6.3), its buffer, or one packet.
  const size_t max = std::min<size_t>({rest->available(), c.peer_credit(), vsock::kMaxPayload});
  if (max == 0) return 0;
  size_t n = 0;
  bool eof = false;
  switch (vsock::read_from_host(c, *rest, max, &n, &eof)) {
    case vsock::Io::kDone: {
      Header h = vsock::host_header(guest_cid_, c.local_port, c.peer_port, vsock::kOpRw,
                                    opts_.buf_alloc, c.fwd_cnt);
      h.len = static_cast<uint32_t>(n);
      if (!head.write_obj(h).ok()) return 0;
      c.tx_cnt += h.len;  // wrapping, as the spec counts
      c.last_fwd_cnt_sent = c.fwd_cnt;
      c.send_credit_update = false;
      return vsock::kHeaderSize + h.len;
    }
    case vsock::Io::kBlocked:
      return 0;
    case vsock::Io::kClosed:
      break;
  }
  if (eof) {
    // The host closed its sending side: the guest reads EOF (virtio 1.2 §5.10.6.5). If the host
    // is gone both ways, it will not receive either.
    c.host_eof = true;
    c.send_shutdown |= vsock::kShutdownSend | (c.host_hup ? vsock::kShutdownRcv : 0);
    return 0;
  }
  kill_locked(c, /*rst=*/true);
  return 0;
}

}  // namespace carapace
