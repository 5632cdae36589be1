// virtio-vsock packets (virtio 1.2 §5.10.6): the 44-byte header that starts every packet on the
// rx and tx queues, the checks a guest packet must pass before the device acts on it, and the
// text line of the host-side handshake ("CONNECT <port>\n", Firecracker's hybrid vsock).
// Pure functions, no I/O: the device, the unit tests and the fuzzer share them.
#pragma once

#include <linux/virtio_vsock.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace carapace::vsock {

static_assert(std::endian::native == std::endian::little, "vsock headers are little-endian");

// virtio 1.2 §5.10.6: struct virtio_vsock_hdr, every field little-endian.
struct Header {
  uint64_t src_cid;
  uint64_t dst_cid;
  uint32_t src_port;
  uint32_t dst_port;
  uint32_t len;  // payload bytes after the header
  uint16_t type;
  uint16_t op;
  uint32_t flags;
  uint32_t buf_alloc;  // the sender's receive buffer for this connection
  uint32_t fwd_cnt;    // bytes the sender has consumed from it so far (wrapping)
} __attribute__((packed));
static_assert(sizeof(Header) == sizeof(virtio_vsock_hdr) && sizeof(Header) == 44);
static_assert(offsetof(Header, len) == offsetof(virtio_vsock_hdr, len));
static_assert(offsetof(Header, fwd_cnt) == offsetof(virtio_vsock_hdr, fwd_cnt));

inline constexpr uint32_t kHeaderSize = sizeof(Header);
// The well-known CID of the host (VMADDR_CID_HOST, <linux/vm_sockets.h>).
inline constexpr uint64_t kHostCid = 2;
// The most payload one packet carries either way (Linux's VIRTIO_VSOCK_MAX_PKT_BUF_SIZE); a
// guest packet claiming more is refused.
inline constexpr uint32_t kMaxPayload = 64 * 1024;

inline constexpr uint16_t kTypeStream = VIRTIO_VSOCK_TYPE_STREAM;
inline constexpr uint16_t kTypeSeqpacket = VIRTIO_VSOCK_TYPE_SEQPACKET;

enum Op : uint16_t {
  kOpInvalid = VIRTIO_VSOCK_OP_INVALID,
  kOpRequest = VIRTIO_VSOCK_OP_REQUEST,
  kOpResponse = VIRTIO_VSOCK_OP_RESPONSE,
  kOpRst = VIRTIO_VSOCK_OP_RST,
  kOpShutdown = VIRTIO_VSOCK_OP_SHUTDOWN,
  kOpRw = VIRTIO_VSOCK_OP_RW,
  kOpCreditUpdate = VIRTIO_VSOCK_OP_CREDIT_UPDATE,
  kOpCreditRequest = VIRTIO_VSOCK_OP_CREDIT_REQUEST,
};

// OP_SHUTDOWN flags (virtio 1.2 §5.10.6.5): the sender will receive / send no more.
inline constexpr uint32_t kShutdownRcv = VIRTIO_VSOCK_SHUTDOWN_RCV;
inline constexpr uint32_t kShutdownSend = VIRTIO_VSOCK_SHUTDOWN_SEND;
inline constexpr uint32_t kShutdownBoth = kShutdownRcv | kShutdownSend;

// VIRTIO_VSOCK_F_STREAM (virtio 1.2 §5.10.3). Drivers that predate it (Linux) do not ack it and
// get stream sockets anyway, which is all this device offers.
inline constexpr uint64_t kFeatureStream = 1ull << 0;

// The event queue's only event (virtio 1.2 §5.10.6.7).
struct Event {
  uint32_t id;
} __attribute__((packed));
inline constexpr uint32_t kEventTransportReset = VIRTIO_VSOCK_EVENT_TRANSPORT_RESET;

// What to do with a packet the guest put on the tx queue.
enum class Verdict {
  kAccept,  // well-formed: dispatch on op
  kRst,     // refuse it with an OP_RST to its sender (and drop any connection it names)
  kDrop,    // ignore it (an RST is never answered with an RST)
};
struct Check {
  Verdict verdict = Verdict::kAccept;
  const char* why = nullptr;  // set unless accepted
};

// docs/security.md #17: the header checks that need no connection state. `payload_bytes` is what
// the chain actually carries after the header. Refused: a source CID other than the guest's
// (spoofing), a destination other than the host, a type other than stream, an unknown op, `len`
// not equal to the payload present, `len` above kMaxPayload, and payload on a control op.
Check check_guest_header(const Header& h, uint64_t guest_cid, uint64_t payload_bytes);

// The OP_RST that refuses `h` (virtio 1.2 §5.10.6.5): addressed back to the guest with the ports
// swapped. A seqpacket request gets a seqpacket RST so the guest's connect() fails.
Header rst_reply(const Header& h, uint64_t guest_cid);

// A header from the host to the guest for connection (local_port → peer_port).
Header host_header(uint64_t guest_cid, uint32_t local_port, uint32_t peer_port, uint16_t op,
                   uint32_t buf_alloc, uint32_t fwd_cnt);

// "CONNECT <port>" (the line without its '\n'): the port, or nullopt for anything else (no sign,
// no spaces but the one, 1-10 digits, at most UINT32_MAX).
std::optional<uint32_t> parse_connect_line(std::string_view line);
// The longest line the device waits for before giving up on a handshake.
inline constexpr size_t kMaxConnectLine = 32;
// "OK <local_port>\n": the device's answer once the guest accepted the connection.
std::string ok_line(uint32_t local_port);

const char* op_name(uint16_t op);

}  // namespace carapace::vsock
