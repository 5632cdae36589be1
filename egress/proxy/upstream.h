// Resolve-then-dial: the proxy looks a name up once, checks every address it got, and connects
// only to addresses it checked -- never by name, never after a second lookup, so a resolver that
// answers differently the second time (DNS rebinding) has no second time.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "egress/policy/egress_policy.h"
#include "egress/policy/ip_address.h"

namespace carapace::egress {

// Name -> addresses. The system resolver in production; tests give a table.
using Resolver = std::function<Result<std::vector<IpAddress>>(const std::string& name)>;

// getaddrinfo(3) for TCP, both families, duplicates removed, in the resolver's order.
Result<std::vector<IpAddress>> resolve_with_system(const std::string& name);

// The address stage of the policy for one destination and one address (check_address with the
// host's own addresses, in production).
using AddressCheck =
    std::function<Decision(const EgressPolicy&, const Destination&, const IpAddress&)>;

struct Upstream {
  UniqueFd fd;  // connected, non-blocking, close-on-exec
  IpAddress address;
};

// What a dial came to when it did not connect: a policy decision (403) or a failure to reach an
// allowed destination (502 / 504).
struct DialRefusal {
  enum class Kind : uint8_t { kDenied, kUnresolved, kUnreachable, kTimeout };
  Kind kind = Kind::kDenied;
  std::string reason;  // one line
  std::string rule;
  std::string address;  // the address that decided, "" if none
  int sys_errno = 0;    // kUnreachable: the last connect's errno (a SOCKS5 reply tells them apart)
};

struct DialOptions {
  Resolver resolve;
  AddressCheck check;
  std::chrono::milliseconds connect_timeout{10000};
};

// The destination passed the name stage; this resolves it (a literal is its own address), checks
// every address -- one denied address denies the whole name, so a name that mixes a public and a
// private answer cannot be steered to the private one -- and connects to the checked addresses in
// order until one answers.
Result<Upstream, DialRefusal> dial_upstream(const EgressPolicy& policy, const Destination& dest,
                                            const DialOptions& options);

}  // namespace carapace::egress
