// virtio-vsock (virtio 1.2 §5.10) with a Unix-socket host side, the "hybrid" design of
// Firecracker: no vhost, the VMM itself terminates the guest's AF_VSOCK stream connections.
//
// Host → guest: a host process connects to the Unix socket at `uds_path` (bound when the device
// is created) and writes "CONNECT <port>\n"; the device sends OP_REQUEST to guest port <port>
// from a fresh host port; on OP_RESPONSE it writes "OK <host port>\n" and the Unix connection
// then carries the stream both ways. A refusal (RST), a malformed line or a timeout closes it.
// Guest → host: an OP_REQUEST to host port P is connected to the Unix socket `<uds_path>_<P>`
// (a listener of a host process); nobody listening → OP_RST.
//
// Queues (virtio 1.2 §5.10.2): rx (0) carries packets to the guest, tx (1) packets from it,
// event (2) the transport-reset event. Only stream sockets are offered.
//
// Threading: one mutex guards everything. Queue notifications (event loop or vCPU thread), host
// socket and timer events (event loop), activate/reset (vCPU threads) all take it. Socket handlers
// hold only a weak reference to the device and look their connection up by id, so a handler that
// races with a close, a reset or the device's destruction finds nothing and returns.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include "common/base/unique_fd.h"
#include "vmm/devices/vsock/vsock_connection.h"
#include "vmm/devices/vsock/vsock_options.h"
#include "vmm/devices/vsock/vsock_packet.h"
#include "vmm/event/event_loop.h"
#include "vmm/virtio/device_base.h"

namespace carapace {

class VirtioVsock : public virtio::DeviceBase, public std::enable_shared_from_this<VirtioVsock> {
 public:
  static constexpr uint16_t kRxQueue = 0, kTxQueue = 1, kEventQueue = 2;
  static constexpr uint16_t kQueueSize = 256;
  // Host ports the device picks for host-initiated connections: [2^30, 2^32 - 1), as
  // Firecracker, clear of the well-known ports guests listen on.
  static constexpr uint32_t kFirstLocalPort = 1u << 30;

  // Binds and listens on `uds_path` and watches it in `loop` (kInvalidInput when the path is in
  // use or cannot be bound). The loop must outlive the device.
  static Result<std::shared_ptr<VirtioVsock>> create(uint64_t guest_cid,
                                                     const std::string& uds_path, EventLoop& loop,
                                                     const vsock::VsockOptions& options = {});
  ~VirtioVsock() override;

  // virtio 1.2 §5.10.4: le64 guest_cid, read-only.
  void read_config(uint64_t offset, std::span<uint8_t> data) const override;

  Status activate(virtio::ActivationContext ctx) override;
  // Closes every host connection; the listener stays.
  void reset() override;
  void queue_notify(uint16_t index) override;

  // Snapshot (DeviceBase, state version 1; resume() in vsock_state.cpp): nothing but the
  // queues, each served to completion under the lock (rx hands an unused buffer back), so
  // nothing is in flight at a save. Host connections do not survive a snapshot and the guest CID
  // comes from the restoring VM's configuration; a restored running device therefore sends a
  // transport reset (below), so the guest drops its connections and reads the new CID (virtio
  // 1.2 §5.10.6.6).

  // virtio 1.2 §5.10.6.7: posts VIRTIO_VSOCK_EVENT_TRANSPORT_RESET (now, or when the driver next
  // gives an event buffer) so the guest drops all its connections, and closes every host
  // connection. Needed after a snapshot restore: host sockets do not survive one.
  void send_transport_reset();

  // Runs every host-socket handler once as if all sockets were ready (spurious readiness is
  // harmless), then fires the deadlines due at `now_ns`. The event loop and the timer do this on
  // their own; tests and fuzzers call it to be deterministic.
  void service_host_sockets();
  void expire_deadlines(uint64_t now_ns);

  struct Stats {
    size_t connections = 0;       // entries in the table, every state
    size_t buffered_bytes = 0;    // guest bytes held for slow host readers, all connections
    uint64_t rst_sent = 0;        // OP_RST packets given to the guest
    uint64_t bad_packets = 0;     // guest packets refused (RST or drop)
    uint64_t refused_by_cap = 0;  // connections refused by max_connections
    uint64_t events_posted = 0;   // transport-reset events delivered
    size_t queued_for_guest = 0;  // rx work waiting for buffers (listed connections, RSTs)
    size_t draining = 0;          // connections the guest reset, still flushing to the host
    uint64_t bytes_dropped = 0;   // guest bytes taken but never written to a host socket
  };
  Stats stats() const;
  const std::string& uds_path() const { return uds_path_; }
  static uint64_t now_ns();

 private:
  // vsock_state.cpp: a restored running device resets the guest's transport.
  Status resume(virtio::ActivationContext ctx) override;

  using Connection = vsock::Connection;
  using Header = vsock::Header;
  static constexpr uint16_t kQueueMaxSizes[] = {kQueueSize, kQueueSize, kQueueSize};

  VirtioVsock(uint64_t guest_cid, std::string uds_path, EventLoop& loop,
              const vsock::VsockOptions& options, UniqueFd listener, UniqueFd timer);

  // vsock_device.cpp: queues and lifetime.
  void pump_locked();
  void process_event_locked();
  bool pop_chain_locked(uint16_t queue, std::optional<virtio::DescriptorChain>* out);
  void close_all_locked();
  Connection* find_locked(uint64_t id);
  Connection* find_by_ports_locked(uint32_t local_port, uint32_t peer_port);
  // Adds a connection to the table (and the port index once it has ports).
  Connection& insert_locked(std::unique_ptr<Connection> c);
  void index_ports_locked(Connection& c);
  void erase_locked(Connection& c);
  // Ends a connection: closes its host socket; with `rst` keeps the entry until an OP_RST has
  // told the guest, otherwise erases it now.
  void kill_locked(Connection& c, bool rst);
  void schedule_rx_locked(Connection& c);
  void set_deadline_locked(Connection& c, uint64_t timeout_ns);
  void arm_timer_locked();
  void on_timer();
  // Host REQUESTs wait while a transport reset is pending or not yet taken by the driver.
  bool holding_requests_locked() const { return event_pending_ || reset_unacked_; }
  // Ends the wait once the driver gave an event buffer back (or its time is up); the REQUESTs
  // held meanwhile are scheduled.
  void check_reset_taken_locked(uint64_t now);

  // vsock_guest_tx.cpp: packets from the guest.
  void process_tx_locked();
  void handle_packet_locked(const Header& h, virtio::ChainReader& payload);
  void refuse_locked(const Header& h);
  void handle_request_locked(const Header& h);
  void handle_rw_locked(Connection& c, const Header& h, virtio::ChainReader& payload);
  void handle_shutdown_locked(Connection& c, uint32_t flags);
  void handle_guest_rst_locked(Connection& c);
  void start_draining_locked(Connection& c);
  void after_guest_data_locked(Connection& c);

  // vsock_guest_rx.cpp: packets to the guest.
  void process_rx_locked();
  bool has_rx_work_locked() const;
  bool connection_has_rx_work(const Connection& c) const;
  // Writes the next packet into `w`: its length, or 0 when there is nothing to send.
  uint32_t fill_rx_packet_locked(virtio::ChainWriter& w);
  uint32_t write_connection_packet_locked(Connection& c, virtio::ChainWriter& w, bool* erase);
  uint32_t write_data_packet_locked(Connection& c, virtio::ChainWriter& w);

  // vsock_host.cpp: the Unix sockets.
  Status watch_locked(Connection& c);
  void unwatch_locked(Connection& c);
  void on_listener();
  void accept_all_locked();
  void on_connection_event(uint64_t id, uint32_t events);
  void service_connection_locked(Connection& c, uint32_t events);
  void read_connect_line_locked(Connection& c);
  void connect_guest_request_locked(const Header& h);
  uint32_t allocate_local_port_locked(uint32_t peer_port);

  const uint64_t guest_cid_;
  const std::string uds_path_;
  EventLoop& loop_;
  const vsock::VsockOptions opts_;
  UniqueFd listener_;
  UniqueFd timer_;          // timerfd for connection deadlines
  dev_t listener_dev_ = 0;  // the socket file we bound, so we unlink only that one
  ino_t listener_ino_ = 0;
  bool listener_watched_ = false, timer_watched_ = false;

  bool broken_ = false;         // NEEDS_RESET reported
  bool tx_stalled_ = false;     // tx stopped: pending_rst_ full, waiting for rx buffers
  bool event_pending_ = false;  // a transport reset waits for an event buffer
  // A posted transport reset the driver has not yet taken. Linux handles the event queue and the
  // rx queue in separate work items, in either order: a REQUEST it reads before the event is
  // answered with the old CID (refused as spoofed) and its connection is then reset by the
  // event. The driver takes the event before it gives the buffer back (avail.idx moves past
  // reset_avail_mark_), so REQUESTs wait for that.
  bool reset_unacked_ = false;
  uint16_t reset_avail_mark_ = 0;
  uint64_t reset_hold_deadline_ns_ = 0;
  uint64_t next_id_ = 1;
  uint32_t next_local_port_ = kFirstLocalPort;
  uint64_t armed_deadline_ = 0;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> conns_;  // by id
  std::unordered_map<uint64_t, uint64_t> by_ports_;                  // port_key → id
  std::deque<uint64_t> rx_list_;    // ids of connections with packets owed to the guest
  std::deque<Header> pending_rst_;  // RSTs for packets that named no connection
  Stats stats_;
};

}  // namespace carapace
