// NetBackend: where a virtio-net device's frames go on the host side (a TAP device, or a Unix
// datagram socket for tests). A backend moves plain Ethernet frames, without any virtio header:
// the device owns the virtio_net_hdr on both sides and never forwards a guest-written header to
// the host kernel. Backends never block: the device drives them from the event loop.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>

#include "common/base/result.h"
#include "vmm/devices/net/virtio_net_abi.h"

namespace carapace::net {

// struct virtio_net_hdr_v1, the header before every frame on both queues (virtio 1.2 §5.1.6: 12
// bytes once VIRTIO_F_VERSION_1 is negotiated, num_buffers included). The TAP fd uses the same
// header (TUNSETVNETHDRSZ).
inline constexpr size_t kVnetHdrLen = sizeof(VirtioNetHdr);
// The smallest frame either direction carries: an Ethernet header (destination, source,
// ethertype).
inline constexpr size_t kEthHeaderLen = 14;
// The largest frame either direction carries: a 64 KiB IP packet with its Ethernet header and a
// VLAN tag, as other VMMs allow (Firecracker's 65562-byte buffer less the 12-byte header).
inline constexpr size_t kMaxFrameLen = 65550;

// What one receive() found.
struct RecvResult {
  enum class Kind {
    kEmpty,    // nothing waiting (EAGAIN)
    kFrame,    // a frame of `len` bytes; len may exceed the buffer (then it was truncated)
    kInvalid,  // a frame the backend cannot pass on (e.g. a TAP GSO packet); consumed
  };
  Kind kind = Kind::kEmpty;
  size_t len = 0;
};

class NetBackend {
 public:
  virtual ~NetBackend() = default;

  // Becomes readable (EPOLLIN) when frames wait, writable (EPOLLOUT) when a frame fits again;
  // non-blocking.
  virtual int fd() const = 0;
  // Sends one frame. Never blocks. A full host queue is an error whose errno is EAGAIN
  // (would_block()): nothing was sent, and the device keeps the frame and stops taking TX
  // chains until fd() is writable. Any other error is a host error; the device counts and drops.
  virtual Status send(std::span<const uint8_t> frame) = 0;
  // Takes one frame into `buf`. A host error means the backend is unusable for now (the device
  // stops reading until the guest's next RX notify).
  virtual Result<RecvResult> receive(std::span<uint8_t> buf) = 0;
  // For log lines: "tap cp0", "unix /run/x.sock".
  virtual const char* describe() const = 0;
};

// A send() that found the host queue full; try again when the backend fd is writable.
inline bool would_block(const Error& e) {
  return e.sys_errno == EAGAIN || e.sys_errno == EWOULDBLOCK;
}

}  // namespace carapace::net
