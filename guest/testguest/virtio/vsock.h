// A virtio-vsock driver (virtio 1.2 §5.10) with a minimal stream-socket layer on top: enough for
// the vsock scenarios to accept host connections, connect to host ports and move bytes both ways
// with the credit rules of §5.10.6.3.
//
// Queues: rx (0) kept full of buffers (header + up to rx_payload bytes, one descriptor each), tx
// (1) fed from slots of header + tx_payload bytes, event (2) given two 4-byte buffers. Every
// received payload is copied at once into its connection's receive ring (whose size is the
// buf_alloc we advertise) and the rx buffer goes straight back to the device, so credit updates
// and control packets can always arrive, whatever the application does. fwd_cnt advances as the
// application reads from the ring.
#pragma once

#include <cstdint>

#include "guest/testguest/virtio/init.h"

namespace testguest::virtio {

struct VsockHdr {
  uint64_t src_cid;
  uint64_t dst_cid;
  uint32_t src_port;
  uint32_t dst_port;
  uint32_t len;
  uint16_t type;
  uint16_t op;
  uint32_t flags;
  uint32_t buf_alloc;
  uint32_t fwd_cnt;
} __attribute__((packed));
static_assert(sizeof(VsockHdr) == 44);

inline constexpr uint64_t kVsockFStream = 1ull << 0;
inline constexpr uint64_t kHostCid = 2;
inline constexpr uint16_t kVsockTypeStream = 1;
enum VsockOp : uint16_t {
  kOpRequest = 1,
  kOpResponse = 2,
  kOpRst = 3,
  kOpShutdown = 4,
  kOpRw = 5,
  kOpCreditUpdate = 6,
  kOpCreditRequest = 7,
};
inline constexpr uint32_t kShutdownBoth = 3;
inline constexpr uint32_t kEventTransportReset = 0;  // virtio 1.2 §5.10.6: event id

class VsockStack;

struct VsockConn {
  enum State : uint8_t { kFree, kConnecting, kEstablished, kClosed };
  State state = kFree;
  bool peer_shutdown = false;  // the peer sent SHUTDOWN (it sends no more)
  bool refused = false;        // our REQUEST was answered with RST
  bool unclaimed = false;      // accepted, not yet returned by VsockStack::accepted()
  uint32_t local_port = 0, peer_port = 0;
  // Credit (virtio 1.2 §5.10.6.3): what the peer can take, and what we have consumed.
  uint32_t peer_buf_alloc = 0, peer_fwd_cnt = 0, tx_cnt = 0;
  uint32_t fwd_cnt = 0, fwd_cnt_sent = 0;
  // Receive ring of buf_alloc bytes.
  uint8_t* ring = nullptr;
  uint32_t ring_head = 0, ring_len = 0;
  uint64_t bytes_in = 0, bytes_out = 0;

  uint32_t readable() const { return ring_len; }
  // What we may still send; 0 if the peer shrank its buffer below what is in flight.
  uint32_t credit() const {
    const uint32_t in_flight = tx_cnt - peer_fwd_cnt;
    return in_flight < peer_buf_alloc ? peer_buf_alloc - in_flight : 0;
  }
};

class VsockStack {
 public:
  static constexpr int kMaxConns = 8;

  // `rx_payload` / `tx_payload`: the most payload bytes per packet each way; `buf_alloc`: each
  // connection's receive ring; `event_idx`: use VIRTIO_RING_F_EVENT_IDX when offered.
  const char* init(const DeviceInfo& info, uint16_t queue_size = 64, uint32_t rx_payload = 4096,
                   uint32_t tx_payload = 4096, uint32_t buf_alloc = 65536, bool event_idx = false);

  // Accept OP_REQUESTs to `port` (up to four ports).
  void listen(uint32_t port);
  // Sends OP_REQUEST to host port `port`; the connection is kConnecting until the answer.
  VsockConn* connect(uint32_t port);

  // Handles everything the device returned: tx completions, and rx packets (new connections,
  // responses, data into rings, credit, shutdown, reset). Returns true if anything happened.
  bool poll();
  // A connection accepted and not yet returned, or nullptr.
  VsockConn* accepted();
  // Polls until a connection is accepted (returned as by accepted()), or nullptr after `timeout`
  // TSC cycles.
  VsockConn* accept_within(uint64_t timeout);

  // Takes up to `n` bytes from the connection's ring (sending a credit update when a quarter of
  // the ring has been freed since the last one we sent).
  uint32_t read(VsockConn& c, void* buf, uint32_t n);
  // Drops up to `n` received bytes without copying them (sinks).
  uint32_t discard(VsockConn& c, uint32_t n);
  // Sends up to `n` bytes as OP_RW packets, as far as the peer's credit and free tx slots allow,
  // without waiting. With `batch`, the device is not notified (call flush()). Returns the bytes
  // sent.
  uint32_t write(VsockConn& c, const void* buf, uint32_t n, bool batch = false);
  // Notifies the device of batched packets.
  void flush() { tx_.kick(); }
  // OP_SHUTDOWN with both flags; the connection stays until the peer's RST (or close()).
  bool shutdown(VsockConn& c);
  // OP_RST and forget the connection.
  void close(VsockConn& c);
  // A control packet (no payload) on `c`.
  bool send_control(VsockConn& c, uint16_t op, uint32_t flags = 0);
  // A raw packet, for the hostile scenario: header as given, `len` bytes of payload.
  bool send_raw(const VsockHdr& h, const void* payload, uint32_t len);

  Device dev;
  Virtqueue rx_, tx_, ev_;
  uint64_t offered = 0, features = 0;
  uint64_t guest_cid = 0;
  uint64_t rst_received = 0;      // RSTs that named no connection of ours
  uint64_t unknown_packets = 0;   // packets for no connection, not REQUESTs to a listening port
  uint64_t rx_bad = 0;            // rx buffers completed with a bad length
  uint64_t transport_resets = 0;  // VIRTIO_VSOCK_EVENT_TRANSPORT_RESET events (after a restore)

 private:
  VsockConn* find(uint32_t local_port, uint32_t peer_port);
  VsockConn* alloc_conn();
  void handle(const VsockHdr& h, const uint8_t* payload, uint32_t len);
  VsockHdr header(const VsockConn& c, uint16_t op, uint32_t len, uint32_t flags);
  // A free tx descriptor; its slot (header + payload) is tx_bufs_ + head * tx slot size.
  int take_tx_slot();
  uint8_t* tx_slot(int head) const;
  void post_rx(uint16_t buffer);
  void reap_tx();

  VsockConn conns_[kMaxConns];
  uint32_t listening_[4] = {};
  int listen_count_ = 0;
  uint32_t next_port_ = 49152;
  uint32_t rx_payload_ = 0, tx_payload_ = 0, buf_alloc_ = 0;
  uint8_t* rx_bufs_ = nullptr;
  uint8_t* tx_bufs_ = nullptr;
  uint32_t* events_ = nullptr;
  uint16_t rx_buffer_of_[Virtqueue::kMaxSize] = {};  // per rx head: the buffer it carries
};

}  // namespace testguest::virtio
