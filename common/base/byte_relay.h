// A byte relay between two stream sockets -- the egress proxy's CONNECT tunnels and forwarded
// responses, the guest agent's forwarder to that proxy: copied into each other until both
// directions end, with a bounded buffer per direction (a peer that stops reading stalls its
// direction; it cannot grow memory) and an idle deadline (a relay no byte has crossed for that
// long is closed).
#pragma once

#include <chrono>
#include <cstdint>

namespace carapace {

struct RelayBytes {
  uint64_t up = 0;    // client -> upstream
  uint64_t down = 0;  // upstream -> client
};

enum class RelayEnd : uint8_t {
  kClosed,   // both directions reached EOF and were passed on
  kReset,    // a socket error (a reset, a peer gone mid-write)
  kIdle,     // nothing moved for the idle timeout
  kStopped,  // stop_fd became readable (the proxy stopping, the policy withdrawn)
};

const char* relay_end_name(RelayEnd e);

// Copies `client` <-> `upstream` (both non-blocking stream sockets). An EOF on one side is passed
// on as shutdown(SHUT_WR) of the other once what was read before it is delivered (half-close,
// RFC 9112 9.6 leaves it to the peers). `only_down`: the client's side is not read at all (a
// forwarded request whose body was already sent: anything more the client writes is a second
// request that must not reach this upstream). Once the upstream's EOF is passed on, the client
// has at most `upstream_closed_idle` of silence left: an upstream that closed mostly has nothing
// left to hear, and a client that neither sends nor closes (a connection opened and left, one the
// proxy already refused) must not hold its slot until `idle`. Adds to `bytes` as data moves.
inline constexpr std::chrono::milliseconds kUpstreamClosedIdle{15'000};
RelayEnd run_relay(int client, int upstream, int stop_fd, std::chrono::milliseconds idle,
                   bool only_down, RelayBytes& bytes,
                   std::chrono::milliseconds upstream_closed_idle = kUpstreamClosedIdle);

}  // namespace carapace
