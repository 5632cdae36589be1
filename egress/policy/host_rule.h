// One entry of an egress policy's allow or deny list, parsed once when the policy is set.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/base/result.h"
#include "egress/policy/ip_address.h"

namespace carapace::egress {

struct HostRule {
  enum class Kind : uint8_t { kName, kWildcard, kAnyName, kNetwork };
  Kind kind = Kind::kName;
  std::string name;              // kName: the normalised name; kWildcard: the suffix after "*."
  IpNetwork network;             // kNetwork
  std::optional<uint16_t> port;  // nullopt: any port
  std::string text;              // as written (for logs and for giving the policy back)
};

// The syntax (every form optionally followed by ":port", 1..65535 in decimal without '+' or
// leading zeros):
//   pypi.org              that name only (normalised: "PyPI.org." is the same rule, IDNA applies)
//   *.pypi.org            any name strictly below pypi.org, at any depth; not pypi.org itself
//   *                     every name, never an IP address literal
//   10.0.0.0/8            a network: IP address literals and resolved addresses inside it
//   203.0.113.7           one address (/32 or /128)
//   [2001:db8::1]:443     IPv6 with a port must be bracketed, network or address
//                         ("[2001:db8::]/32:443"); unbracketed IPv6 ("2001:db8::/32") has none
// "*" only as the whole first label. Every error is invalid-input, one line naming the rule.
Result<HostRule> parse_host_rule(std::string_view text);

}  // namespace carapace::egress
