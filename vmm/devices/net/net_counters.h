// NetCounters: what a virtio-net device did and dropped, by reason. Written under the device
// lock, readable from any thread (relaxed atomics; each counter on its own is exact).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "vmm/devices/net/egress_policy.h"

namespace carapace::net {

struct NetCounters {
  using Counter = std::atomic<uint64_t>;

  // TX: guest → backend.
  Counter tx_frames{0}, tx_bytes{0};  // handed to the backend
  Counter tx_dropped_bad_header{0};   // chain shorter than the virtio_net_hdr (also bad_request)
  Counter tx_dropped_runt{0};       // frame shorter than an Ethernet header (docs/security.md #16)
  Counter tx_dropped_oversized{0};  // frame longer than kMaxFrameLen (docs/security.md #16)
  Counter tx_dropped_backend{0};    // the backend failed it (peer gone, host error)
  Counter tx_backend_full{0};       // times TX paused: the backend queue was full (EAGAIN)
  Counter tx_dropped_reset{0};      // the frame held for a full backend, dropped by a reset
  // Denied by the egress policy, indexed by EgressVerdict (entry 0, kAllow, stays 0).
  std::array<Counter, kEgressVerdictCount> tx_dropped_policy{};
  Counter tx_throttled{0};  // times TX paused for the rate limiter

  // RX: backend → guest.
  Counter rx_frames{0}, rx_bytes{0};  // delivered into guest buffers
  Counter rx_dropped_runt{0};         // backend frame shorter than an Ethernet header
  Counter rx_dropped_oversized{0};    // backend frame longer than kMaxFrameLen
  Counter rx_dropped_invalid{0};      // a frame the backend could not pass on (TAP GSO)
  Counter rx_dropped_no_room{0};      // frame larger than the guest's buffer (no MRG_RXBUF)
  Counter rx_dropped_reset{0};        // the held frame, dropped by a device reset
  Counter rx_bad_buffer{0};           // RX chain too small for the header, returned empty
  Counter rx_backend_errors{0};       // receive() failed; reading stops until the next RX notify
  Counter rx_ring_full{0};            // times RX paused: a frame waits and the ring is empty
  Counter rx_throttled{0};            // times RX paused for the rate limiter
  Counter backend_wakeups{0};         // backend-readable events handled

  uint64_t tx_dropped_policy_total() const {
    uint64_t n = 0;
    for (const auto& c : tx_dropped_policy)
      n += c.load(std::memory_order_relaxed);
    return n;
  }
};

inline void bump(std::atomic<uint64_t>& c, uint64_t n = 1) {
  c.fetch_add(n, std::memory_order_relaxed);
}

}  // namespace carapace::net
