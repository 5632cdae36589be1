// One client connection of the egress proxy (internal to egress/proxy): the socket, a cut signal
// the policy or a stop can raise, and where it was let through to, so a new policy can re-check it.
#pragma once

#include <mutex>
#include <optional>

#include "common/base/event_fd.h"
#include "common/base/unique_fd.h"
#include "egress/policy/egress_policy.h"
#include "egress/policy/ip_address.h"
#include "egress/proxy/egress_proxy.h"

namespace carapace::egress {

// Whether a connection to `dest` (dialled at `address`, once it is), let through under an earlier
// policy, is still allowed under `policy`: the name stage, then the address stage.
inline bool still_allowed(const EgressPolicy& policy, const AddressCheck& check,
                          const Destination& dest, const std::optional<IpAddress>& address) {
  if (!decide(policy, dest).allowed) return false;
  return !address || check(policy, dest, *address).allowed;
}

struct EgressProxy::Connection {
  Connection(UniqueFd fd, EventFd cut_signal) : client(std::move(fd)), cut(std::move(cut_signal)) {}

  UniqueFd client;
  EventFd cut;  // readable: end this connection now

  std::mutex mu;
  std::optional<Destination> destination;  // set once the name stage let it through
  std::optional<IpAddress> address;        // set once dialled
};

}  // namespace carapace::egress
