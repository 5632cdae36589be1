// virtio-vsock: creation, activation and reset, the event queue, the connection table and its
// deadlines. Packets from the guest are in vsock_guest_tx.cpp, packets to it in
// vsock_guest_rx.cpp, the Unix sockets in vsock_host.cpp.
#include "vmm/devices/vsock/vsock_device.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>

#include <cstring>
#include <ctime>
#include <vector>

#include "common/base/log.h"
#include "common/base/stale_socket.h"

namespace carapace {

using vsock::Connection;

namespace {

struct BoundSocket {
  UniqueFd fd;
  dev_t dev = 0;
  ino_t ino = 0;
};

Result<BoundSocket> bind_listener(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    return as_invalid_input(make_error("vsock: socket path empty or too long: '" + path + "'"));
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  BoundSocket s;
  s.fd = UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!s.fd.valid()) return sys_error("vsock: socket");
  // A socket file left by a VMM that was killed is replaced; a live one is not (two VMs on one
  // path would steal each other's connections).
  if (Status free = remove_stale_socket(path); !free.ok()) {
    Error e = free.take_error();
    e.message = "vsock: " + e.message;
    return e;
  }
  if (::bind(s.fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0)
    return as_invalid_input(sys_error("vsock: bind " + path));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    s.dev = st.st_dev;
    s.ino = st.st_ino;
  }
  if (::listen(s.fd.get(), 128) < 0) {
    const Error e = sys_error("vsock: listen " + path);
    ::unlink(path.c_str());
    return e;
  }
  return s;
}

}  // namespace

uint64_t VirtioVsock::now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

Result<std::shared_ptr<VirtioVsock>> VirtioVsock::create(uint64_t guest_cid,
                                                         const std::string& uds_path,
                                                         EventLoop& loop,
                                                         const vsock::VsockOptions& options) {
  if (guest_cid <= vsock::kHostCid || guest_cid >= UINT32_MAX)
    return as_invalid_input(make_error("vsock: guest CID must be 3 to 4294967294"));
  int tfd = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (tfd < 0) return sys_error("vsock: timerfd_create");
  UniqueFd timer(tfd);
  BoundSocket bound = TRY(bind_listener(uds_path));
  std::shared_ptr<VirtioVsock> dev(
      new VirtioVsock(guest_cid, uds_path, loop, options, std::move(bound.fd), std::move(timer)));
  dev->listener_dev_ = bound.dev;
  dev->listener_ino_ = bound.ino;
  std::weak_ptr<VirtioVsock> weak = dev;
  // Edge-triggered: accept_all_locked() drains the backlog each time, and an fd shortage
  // (EMFILE) cannot turn into a busy loop.
  TRY_STATUS(loop.add(dev->listener_.get(), EPOLLIN | EPOLLET, [weak](uint32_t) {
    if (auto self = weak.lock()) self->on_listener();
  }));
  dev->listener_watched_ = true;
  TRY_STATUS(loop.add(dev->timer_.get(), EPOLLIN, [weak](uint32_t) {
    if (auto self = weak.lock()) self->on_timer();
  }));
  dev->timer_watched_ = true;
  LOG_INFO("virtio-vsock: guest CID %llu, host socket %s",
           static_cast<unsigned long long>(guest_cid), uds_path.c_str());
  return dev;
}

VirtioVsock::VirtioVsock(uint64_t guest_cid, std::string uds_path, EventLoop& loop,
                         const vsock::VsockOptions& options, UniqueFd listener, UniqueFd timer)
    : DeviceBase({.type = virtio::DeviceType::kVsock,
                  .name = "virtio-vsock",
                  .queue_max_sizes = kQueueMaxSizes,
                  .features = vsock::kFeatureStream,
                  .state_version = 1}),
      guest_cid_(guest_cid),
      uds_path_(std::move(uds_path)),
      loop_(loop),
      opts_(options),
      listener_(std::move(listener)),
      timer_(std::move(timer)) {}

VirtioVsock::~VirtioVsock() {
  std::lock_guard<std::mutex> lock(mu_);
  close_all_locked();
  if (listener_watched_) (void)loop_.remove(listener_.get());
  if (timer_watched_) (void)loop_.remove(timer_.get());
  // Remove the socket file only if it is still the one this device bound.
  struct stat st {};
  if (::stat(uds_path_.c_str(), &st) == 0 && st.st_dev == listener_dev_ &&
      st.st_ino == listener_ino_)
    ::unlink(uds_path_.c_str());
}

void VirtioVsock::read_config(uint64_t offset, std::span<uint8_t> data) const {
  const uint64_t cid = guest_cid_;  // little-endian host (vsock_packet.h)
  virtio::read_config_struct(cid, offset, data);
}

Status VirtioVsock::activate(virtio::ActivationContext ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ctx.queues.size() != 3) return make_error("virtio-vsock: expects three queues");
  ctx_ = std::move(ctx);
  broken_ = tx_stalled_ = event_pending_ = reset_unacked_ = false;
  // Host CONNECTs that came before the driver send their REQUESTs now.
  pump_locked();
  return {};
}

void VirtioVsock::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  close_all_locked();
  ctx_.reset();
  broken_ = tx_stalled_ = event_pending_ = reset_unacked_ = false;
}

void VirtioVsock::queue_notify(uint16_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!ctx_ || broken_) return;
  if (index == kEventQueue) {
    process_event_locked();
    check_reset_taken_locked(now_ns());
  } else if (index == kRxQueue || index == kTxQueue)
    pump_locked();
}

void VirtioVsock::send_transport_reset() {
  std::lock_guard<std::mutex> lock(mu_);
  close_all_locked();
  tx_stalled_ = false;
  if (!ctx_ || broken_) return;  // no driver: it has no connections to drop
  event_pending_ = true;
  process_event_locked();
}

void VirtioVsock::pump_locked() {
  if (!ctx_ || broken_) return;
  if (reset_unacked_) check_reset_taken_locked(now_ns());
  // tx stops when the RSTs it owes fill pending_rst_; rx drains them; go on while that frees
  // room (virtio 1.2 §5.10.6.1: the device keeps processing tx as long as it can reply).
  do {
    process_tx_locked();
    process_rx_locked();
  } while (ctx_ && !broken_ && tx_stalled_ && pending_rst_.size() < opts_.max_pending_rst);
}

bool VirtioVsock::pop_chain_locked(uint16_t queue, std::optional<virtio::DescriptorChain>* out) {
  auto next = ctx_->queues[queue].pop();
  if (!next.ok()) {  // a corrupt ring: stop until the driver resets the device
    broken_ = true;
    ctx_->signals->report_needs_reset(next.error());
    return false;
  }
  *out = std::move(next.value());
  return true;
}

void VirtioVsock::process_event_locked() {
  virtio::Queue& q = ctx_->queues[kEventQueue];
  while (event_pending_) {
    std::optional<virtio::DescriptorChain> chain;
    if (!pop_chain_locked(kEventQueue, &chain)) return;
    if (!chain) {
      if (q.enable_notification()) continue;
      break;
    }
    auto w = chain->writer();
    const vsock::Event ev{vsock::kEventTransportReset};
    if (w.write_obj(ev).ok()) {
      event_pending_ = false;
      ++stats_.events_posted;
      (void)q.add_used(chain->head(), sizeof ev);
      reset_unacked_ = true;
      reset_avail_mark_ = q.avail_idx();
      reset_hold_deadline_ns_ = now_ns() + opts_.reset_ack_timeout_ns;
      q.notify_at_next_avail();  // the buffer coming back is the sign
      arm_timer_locked();
    } else {  // no room for the event: give the buffer back unused
      ctx_->errors->bad_request.fetch_add(1, std::memory_order_relaxed);
      (void)q.add_used(chain->head(), 0);
    }
  }
  if (q.needs_notification()) ctx_->signals->signal_used(kEventQueue);
}

void VirtioVsock::check_reset_taken_locked(uint64_t now) {
  if (!reset_unacked_ || !ctx_ || event_pending_) return;
  const bool taken = ctx_->queues[kEventQueue].avail_idx() != reset_avail_mark_;
  if (!taken && now < reset_hold_deadline_ns_) return;
  if (!taken) LOG_DEBUG("virtio-vsock: the driver kept the transport reset's event buffer");
  reset_unacked_ = false;
  reset_hold_deadline_ns_ = 0;
  for (auto& [id, c] : conns_)
    if (c->state == Connection::State::kAwaitingResponse && c->send_request) schedule_rx_locked(*c);
  arm_timer_locked();
  pump_locked();
}

// ---- the connection table ----

Connection* VirtioVsock::find_locked(uint64_t id) {
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : it->second.get();
}

Connection* VirtioVsock::find_by_ports_locked(uint32_t local_port, uint32_t peer_port) {
  auto it = by_ports_.find(vsock::port_key(local_port, peer_port));
  return it == by_ports_.end() ? nullptr : find_locked(it->second);
}

Connection& VirtioVsock::insert_locked(std::unique_ptr<Connection> c) {
  c->id = next_id_++;
  Connection& ref = *c;
  conns_.emplace(ref.id, std::move(c));
  return ref;
}

void VirtioVsock::index_ports_locked(Connection& c) {
  by_ports_[c.key()] = c.id;
}

void VirtioVsock::erase_locked(Connection& c) {
  stats_.bytes_dropped += c.out.size();
  unwatch_locked(c);
  auto it = by_ports_.find(c.key());
  if (it != by_ports_.end() && it->second == c.id) by_ports_.erase(it);
  conns_.erase(c.id);  // stale ids left in rx_list_ are skipped
}

void VirtioVsock::kill_locked(Connection& c, bool rst) {
  unwatch_locked(c);
  c.fd.reset();
  stats_.bytes_dropped += c.out.size();
  c.out = vsock::OutBuffer();
  c.prefix.clear();
  // No RST for what the guest never heard of: a handshake line not yet read, or a REQUEST
  // still waiting for an rx buffer.
  if (!rst || c.state == Connection::State::kReadingConnect || c.send_request) {
    erase_locked(c);
    return;
  }
  c.state = Connection::State::kClosing;
  c.send_response = c.send_credit_update = false;
  c.send_shutdown = 0;
  c.send_rst = true;
  c.deadline_ns = 0;
  schedule_rx_locked(c);
}

void VirtioVsock::close_all_locked() {
  for (auto& [id, c] : conns_)
    unwatch_locked(*c);
  conns_.clear();
  by_ports_.clear();
  rx_list_.clear();
  pending_rst_.clear();
  arm_timer_locked();
}

void VirtioVsock::schedule_rx_locked(Connection& c) {
  if (c.in_rx_list) return;
  // Ids of connections that ended while listed stay until rx reaches them; a guest that opens
  // and resets connections while giving no rx buffers must not grow the list without bound.
  if (rx_list_.size() >= 2 * conns_.size() + 64) {
    std::erase_if(rx_list_, [this](uint64_t id) { return find_locked(id) == nullptr; });
  }
  c.in_rx_list = true;
  rx_list_.push_back(c.id);
}

// ---- deadlines ----

void VirtioVsock::set_deadline_locked(Connection& c, uint64_t timeout_ns) {
  c.deadline_ns = now_ns() + timeout_ns;
  if (armed_deadline_ == 0 || c.deadline_ns < armed_deadline_) arm_timer_locked();
}

void VirtioVsock::arm_timer_locked() {
  uint64_t next = reset_unacked_ ? reset_hold_deadline_ns_ : 0;
  for (const auto& [id, c] : conns_)
    if (c->deadline_ns != 0 && (next == 0 || c->deadline_ns < next)) next = c->deadline_ns;
  if (next == armed_deadline_) return;
  itimerspec spec{};  // all zero disarms
  spec.it_value.tv_sec = static_cast<time_t>(next / 1000000000);
  spec.it_value.tv_nsec = static_cast<long>(next % 1000000000);
  if (::timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &spec, nullptr) < 0)
    LOG_WARN("virtio-vsock: timerfd_settime failed");
  armed_deadline_ = next;
}

void VirtioVsock::on_timer() {
  uint64_t expirations;
  (void)!::read(timer_.get(), &expirations, sizeof expirations);
  expire_deadlines(now_ns());
}

void VirtioVsock::expire_deadlines(uint64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> due;
  for (const auto& [id, c] : conns_)
    if (c->deadline_ns != 0 && c->deadline_ns <= now) due.push_back(id);
  for (uint64_t id : due) {
    Connection* c = find_locked(id);
    if (c == nullptr) continue;
    c->deadline_ns = 0;
    if (c->state == Connection::State::kClosing) continue;  // its RST is already queued
    if (c->state == Connection::State::kDraining) {         // the host reader stalled: give up
      LOG_DEBUG("virtio-vsock: dropping %zu bytes the guest sent before its RST", c->out.size());
      erase_locked(*c);
      continue;
    }
    LOG_DEBUG("virtio-vsock: connection %u <-> %u timed out", c->local_port, c->peer_port);
    // A handshake that never finished, or a shutdown the peer never completed: reset it.
    kill_locked(*c, /*rst=*/true);
  }
  armed_deadline_ = 0;  // fired (or about to): compute afresh
  check_reset_taken_locked(now);
  arm_timer_locked();
  pump_locked();
}

VirtioVsock::Stats VirtioVsock::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.connections = conns_.size();
  s.queued_for_guest = rx_list_.size() + pending_rst_.size();
  s.buffered_bytes = 0;
  for (const auto& [id, c] : conns_) {
    s.buffered_bytes += c->out.size();
    s.draining += c->state == Connection::State::kDraining;
  }
  return s;
}

}  // namespace carapace
