// A sandbox's egress policy and its two decisions: the name stage, on what the client asked for
// before anything is resolved, and the address stage, on every address the proxy would dial.
// A name passing the first stage still reaches nothing that the second refuses, so a rule for a
// name cannot be turned into a way to the host or its networks through DNS (a name that resolves
// to 127.0.0.1 or 169.254.169.254).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "egress/policy/host_rule.h"
#include "egress/policy/ip_address.h"

namespace carapace::egress {

// Where a client asked to go, before any resolution.
struct Destination {
  std::string host;  // the normalised name, or the literal's to_string()
  uint16_t port = 0;
  std::optional<IpAddress> literal;  // set when the client named an IP address
};

// `host` as the client wrote it: a name (normalize_host_name), an IPv4 literal, or IPv6 with or
// without brackets. Port 1..65535; 0 is refused. Invalid-input errors.
Result<Destination> parse_destination(std::string_view host, uint16_t port);

inline constexpr size_t kMaxPolicyRules = 256;  // per list

struct EgressPolicy {
  std::vector<HostRule> allow;
  std::vector<HostRule> deny;

  // Each entry through parse_host_rule; at most kMaxPolicyRules in each list. Errors name the
  // entry: "allow_hosts[3]: host rule ...", "deny_hosts[0]: ...".
  static Result<EgressPolicy> parse(const std::vector<std::string>& allow_hosts,
                                    const std::vector<std::string>& deny_hosts);
  std::vector<std::string> allow_texts() const;  // the rules as written
  std::vector<std::string> deny_texts() const;
};

// The ports a sandbox's transparent mode captures on its stand-in addresses (egress/README.md):
// 80 and 443, then each port a name, wildcard or "*" allow rule names, in rule order, distinct,
// at most kMaxTransparentPorts in all (further ones only through the proxy variables).
inline constexpr size_t kMaxTransparentPorts = 16;
std::vector<uint16_t> transparent_ports(const EgressPolicy& policy);

struct Decision {
  bool allowed = false;
  std::string reason;  // one short line: "allowed by 'pypi.org:443'", "no allow rule matches"
  std::string rule;    // the text of the rule that decided, "" if none
};

// What the name stage matches: names against name, wildcard and "*" rules, literals against
// network rules, and a rule with a port only that port. Also what says which hosts a credential
// (egress/credentials) is for.
bool rule_matches(const HostRule& rule, const Destination& dest);

// The name stage. Deny wins: any matching deny rule denies. A name is allowed only by a matching
// name, wildcard or "*" allow rule (network rules never match names); a literal only by a network
// allow rule containing it (name rules never match literals), and it is denied by any network
// deny rule containing it or its embedded IPv4. A rule with a port matches only that port.
Decision decide(const EgressPolicy& policy, const Destination& dest);

// The address stage, for every address a name resolved to (and for a literal). Loopback,
// link-local, unspecified, multicast, broadcast, reserved and the host's own addresses are
// always denied; private and cgnat ones unless a network allow rule (port-matching) contains the
// address (an operator's internal mirror); a network deny rule containing the address or its
// embedded IPv4 denies it whatever its class. Public addresses are otherwise allowed.
Decision check_address(const EgressPolicy& policy, const Destination& dest,
                       const IpAddress& address, std::span<const IpAddress> host_addresses);

}  // namespace carapace::egress
