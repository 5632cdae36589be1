// One vsock stream connection as the device sees it: the guest's (CID, port) on one side, a host
// Unix stream socket on the other, and the credit bookkeeping of virtio 1.2 §5.10.6.3 in both
// directions. Plain state plus the socket I/O helpers; the device owns the table of connections
// and every decision about packets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/base/unique_fd.h"
#include "vmm/virtio/chain_io.h"

namespace carapace::vsock {

// Guest bytes waiting for a host socket that would block: a FIFO whose size the credit check
// keeps at or below buf_alloc. Memory is taken only while bytes wait and is released when empty.
class OutBuffer {
 public:
  size_t size() const { return data_.size() - head_; }
  bool empty() const { return size() == 0; }
  std::span<const uint8_t> front() const { return std::span<const uint8_t>(data_).subspan(head_); }
  void consume(size_t n);
  // Copies `n` bytes from `reader` (all or nothing; a guest error if it has fewer).
  Status append(virtio::ChainReader& reader, size_t n);

 private:
  std::vector<uint8_t> data_;
  size_t head_ = 0;
};

// Credit arithmetic is done in uint32 with wrapping counters, as the spec defines it, but clamped
// so that a peer's bogus fwd_cnt or buf_alloc can never make a result wrap into a huge credit
// (docs/security.md #17).
//
// Bytes `peer` can still take: buf_alloc - (sent - fwd_cnt), or 0 when the peer claims to have
// consumed more than was sent or more than it has room for.
inline uint32_t free_credit(uint32_t buf_alloc, uint32_t sent, uint32_t fwd_cnt) {
  const uint32_t in_flight = sent - fwd_cnt;  // wraps by design
  return in_flight >= buf_alloc ? 0 : buf_alloc - in_flight;
}

struct Connection {
  enum class State {
    kReadingConnect,    // host-initiated: waiting for "CONNECT <port>\n" (no ports yet)
    kAwaitingResponse,  // host-initiated: REQUEST queued or sent to the guest
    kEstablished,
    kClosing,  // host socket closed; an RST to the guest is queued, then the entry goes
    // The guest reset the connection while bytes it sent still waited for the host socket: they
    // are written out (bounded by shutdown_timeout_ns), then the socket closes. Out of the port
    // index: for the guest the connection is gone and its ports are free again.
    kDraining,
  };

  uint64_t id = 0;  // never reused: event handlers find the connection by it
  State state = State::kReadingConnect;
  bool host_initiated = false;
  UniqueFd fd;               // the host Unix socket (closed in kClosing)
  uint32_t local_port = 0;   // host side
  uint32_t peer_port = 0;    // guest side
  uint64_t deadline_ns = 0;  // 0: none (CLOCK_MONOTONIC)

  // Packets owed to the guest, sent as rx buffers allow (each a flag, so they cannot pile up).
  bool send_request = false;
  bool send_response = false;
  bool send_rst = false;
  bool send_credit_update = false;
  bool credit_requested = false;  // CREDIT_REQUEST sent, no guest packet since
  uint32_t send_shutdown = 0;     // SHUTDOWN flags still to send
  bool in_rx_list = false;

  // Shutdown state (virtio 1.2 §5.10.6.5).
  uint32_t shutdown_sent = 0;  // flags sent to the guest
  uint32_t peer_shutdown = 0;  // flags received from the guest
  bool host_shut_wr = false;   // shutdown(SHUT_WR) done on the host socket

  // Host socket readiness, tracked by hand: the socket is watched edge-triggered, so `readable`
  // stays true until a read says EAGAIN, `writable` until a write does.
  bool host_readable = false;
  bool host_writable = true;
  bool host_eof = false;  // read() returned 0
  bool host_hup = false;  // EPOLLHUP: the host side is gone both ways

  // Host → guest credit: what the guest advertised and what the device sent it.
  uint32_t peer_buf_alloc = 0;
  uint32_t peer_fwd_cnt = 0;
  uint32_t tx_cnt = 0;  // payload bytes sent to the guest

  // Guest → host credit: what the device received and how much of it reached the host socket.
  uint32_t rx_cnt = 0;
  uint32_t fwd_cnt = 0;
  uint32_t last_fwd_cnt_sent = 0;  // the fwd_cnt the guest last heard of
  OutBuffer out;                   // received, not yet written (rx_cnt - fwd_cnt bytes)
  std::string prefix;              // "OK <port>\n": written before any guest byte

  uint64_t key() const { return (uint64_t{local_port} << 32) | peer_port; }
  // What the guest may still send the device (our buffer's free space, as it will compute it).
  uint32_t room_for_guest(uint32_t buf_alloc) const {
    return free_credit(buf_alloc, rx_cnt, fwd_cnt);
  }
  uint32_t peer_credit() const { return free_credit(peer_buf_alloc, tx_cnt, peer_fwd_cnt); }
};

inline uint64_t port_key(uint32_t local_port, uint32_t peer_port) {
  return (uint64_t{local_port} << 32) | peer_port;
}

// Host socket I/O. kBlocked: EAGAIN (wait for the socket), kClosed: the host side is gone
// (EOF on read, EPIPE/ECONNRESET/... on write).
enum class Io { kDone, kBlocked, kClosed };

// Writes `prefix`, then the out buffer, to the host socket; counts guest bytes in fwd_cnt.
Io flush_to_host(Connection& c);
// Forwards `n` payload bytes of a guest RW packet: straight to the socket when nothing waits
// before them, the rest into the out buffer. The caller has checked the credit (n fits).
Io forward_to_host(Connection& c, virtio::ChainReader& payload, size_t n);

// Reads at most `max` bytes from the host socket into `payload` (guest memory). kDone with
// *n > 0: data; kClosed: EOF or an error (*eof tells which); kBlocked: nothing to read.
Io read_from_host(Connection& c, virtio::ChainWriter& payload, size_t max, size_t* n, bool* eof);

}  // namespace carapace::vsock
