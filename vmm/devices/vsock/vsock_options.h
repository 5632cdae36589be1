// Limits of one virtio-vsock device. The defaults are what the machine uses; tests shrink them
// (short timeouts, a small cap) to reach the limits quickly.
#pragma once

#include <cstddef>
#include <cstdint>

namespace carapace::vsock {

struct VsockOptions {
  // docs/security.md #18: host connections per VM, in every state and both directions (host
  // CONNECTs still handshaking included). One more guest REQUEST gets an RST; one more host
  // connection is accepted and closed at once.
  size_t max_connections = 1024;
  // The receive buffer the device advertises per connection (buf_alloc, virtio 1.2 §5.10.6.3):
  // the most guest bytes it ever holds for one connection whose host reader is slow. Memory for
  // them is taken only while the host socket is full, so the worst case for a VM is
  // max_connections * buf_alloc, reached only if every host reader stalls.
  uint32_t buf_alloc = 128 * 1024;
  // RSTs answering packets that name no connection (bad packets, refused requests), waiting for
  // rx buffers. Beyond this the device stops taking tx packets until the driver gives rx buffers
  // (virtio 1.2 §5.10.6.1), so a guest that never reaps cannot grow the queue.
  size_t max_pending_rst = 256;
  // A host connection must send its CONNECT line and the guest must answer the REQUEST within
  // this time, or the Unix connection is closed.
  uint64_t connect_timeout_ns = 5'000'000'000;
  // After a transport reset, host REQUESTs wait until the driver has taken the event (it gives
  // the event buffer back), at most this long: a driver that never gives it back is then served
  // as before (see VirtioVsock::holding_requests_locked).
  uint64_t reset_ack_timeout_ns = 1'000'000'000;
  // After a SHUTDOWN with both flags (either way), the connection is reset if it has not ended
  // within this time (virtio 1.2 §5.10.6.5: "an implementation-specific amount of time").
  uint64_t shutdown_timeout_ns = 2'000'000'000;
};

}  // namespace carapace::vsock
