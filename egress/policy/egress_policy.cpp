#include "egress/policy/egress_policy.h"

#include <algorithm>

#include "egress/policy/address_class.h"
#include "egress/policy/host_name.h"
#include "egress/policy/quote.h"

namespace carapace::egress {
namespace {

bool port_matches(const HostRule& rule, uint16_t port) {
  return !rule.port || *rule.port == port;
}

bool name_matches(const HostRule& rule, const std::string& host) {
  switch (rule.kind) {
    case HostRule::Kind::kName:
      return host == rule.name;
    case HostRule::Kind::kWildcard:
      // Strictly below the suffix: "a.pypi.org" and "a.b.pypi.org", never "pypi.org" itself
      // nor "xpypi.org".
      return host.size() > rule.name.size() + 1 && host.ends_with(rule.name) &&
             host[host.size() - rule.name.size() - 1] == '.';
    case HostRule::Kind::kAnyName:
      return true;
    case HostRule::Kind::kNetwork:
      return false;
  }
  return false;
}

// A deny network rule also catches the IPv4 address an IPv6 one carries (NAT64, 6to4): denying
// 203.0.113.0/24 must not be undone by writing it as 64:ff9b::cb00:7107.
bool deny_network_contains(const HostRule& rule, const IpAddress& a) {
  if (rule.kind != HostRule::Kind::kNetwork) return false;
  if (rule.network.contains(a)) return true;
  auto inner = embedded_v4(a);
  return inner && rule.network.contains(*inner);
}

const HostRule* find_deny_network(const EgressPolicy& policy, uint16_t port, const IpAddress& a) {
  for (const HostRule& rule : policy.deny) {
    if (port_matches(rule, port) && deny_network_contains(rule, a)) return &rule;
  }
  return nullptr;
}

const HostRule* find_allow_network(const EgressPolicy& policy, uint16_t port, const IpAddress& a) {
  for (const HostRule& rule : policy.allow) {
    if (rule.kind == HostRule::Kind::kNetwork && port_matches(rule, port) &&
        rule.network.contains(a))
      return &rule;
  }
  return nullptr;
}

Decision by_rule(bool allowed, const HostRule& rule) {
  return Decision{allowed, std::string(allowed ? "allowed by " : "denied by ") + quoted(rule.text),
                  rule.text};
}

Result<std::vector<HostRule>> parse_list(const char* list_name,
                                         const std::vector<std::string>& texts) {
  if (texts.size() > kMaxPolicyRules) {
    return as_invalid_input(make_error(std::string(list_name) + " has " +
                                       std::to_string(texts.size()) + " rules; at most " +
                                       std::to_string(kMaxPolicyRules) + " are allowed"));
  }
  std::vector<HostRule> rules;
  rules.reserve(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    auto rule = parse_host_rule(texts[i]);
    if (!rule) {
      return as_invalid_input(make_error(std::string(list_name) + "[" + std::to_string(i) +
                                         "]: " + rule.error().message));
    }
    rules.push_back(std::move(rule).value());
  }
  return rules;
}

std::vector<std::string> texts_of(const std::vector<HostRule>& rules) {
  std::vector<std::string> out;
  out.reserve(rules.size());
  for (const HostRule& rule : rules)
    out.push_back(rule.text);
  return out;
}

}  // namespace

bool rule_matches(const HostRule& rule, const Destination& dest) {
  if (!port_matches(rule, dest.port)) return false;
  if (dest.literal)
    return rule.kind == HostRule::Kind::kNetwork && rule.network.contains(*dest.literal);
  return name_matches(rule, dest.host);
}

Result<Destination> parse_destination(std::string_view host, uint16_t port) {
  if (port == 0) return as_invalid_input(make_error("destination port 0 is not a port"));
  Destination dest;
  dest.port = port;
  if (auto literal = IpAddress::parse(host)) {
    dest.host = literal->to_string();
    dest.literal = literal;
    return dest;
  }
  dest.host = TRY(normalize_host_name(host));
  return dest;
}

Result<EgressPolicy> EgressPolicy::parse(const std::vector<std::string>& allow_hosts,
                                         const std::vector<std::string>& deny_hosts) {
  EgressPolicy policy;
  policy.allow = TRY(parse_list("allow_hosts", allow_hosts));
  policy.deny = TRY(parse_list("deny_hosts", deny_hosts));
  return policy;
}

std::vector<std::string> EgressPolicy::allow_texts() const {
  return texts_of(allow);
}

std::vector<std::string> EgressPolicy::deny_texts() const {
  return texts_of(deny);
}

Decision decide(const EgressPolicy& policy, const Destination& dest) {
  for (const HostRule& rule : policy.deny) {
    const bool hit =
        dest.literal ? port_matches(rule, dest.port) && deny_network_contains(rule, *dest.literal)
                     : rule_matches(rule, dest);
    if (hit) return by_rule(false, rule);
  }
  for (const HostRule& rule : policy.allow) {
    if (rule_matches(rule, dest)) return by_rule(true, rule);
  }
  if (dest.literal) {
    for (const HostRule& rule : policy.allow) {
      if (rule.kind == HostRule::Kind::kNetwork)
        return Decision{false, "no allow rule matches", ""};
    }
    return Decision{false, "IP address literal with no network rule", ""};
  }
  return Decision{false, "no allow rule matches", ""};
}

Decision check_address(const EgressPolicy& policy, const Destination& dest,
                       const IpAddress& address, std::span<const IpAddress> host_addresses) {
  if (const HostRule* rule = find_deny_network(policy, dest.port, address))
    return by_rule(false, *rule);
  const AddressClass c = classify_address(address, host_addresses);
  const std::string what = std::string(address_class_name(c)) +
                           (c == AddressClass::kHostOwn ? " " : " address ") + address.to_string();
  const std::string prefix = dest.literal ? "" : "resolves to ";
  switch (c) {
    case AddressClass::kPublic:
      return Decision{true, prefix + what, ""};
    case AddressClass::kPrivate:
    case AddressClass::kCgnat:
      if (const HostRule* rule = find_allow_network(policy, dest.port, address))
        return by_rule(true, *rule);
      return Decision{false, prefix + what + " (no network allow rule contains it)", ""};
    default:
      return Decision{false, prefix + what, ""};
  }
}

std::vector<uint16_t> transparent_ports(const EgressPolicy& policy) {
  std::vector<uint16_t> ports{80, 443};
  for (const HostRule& r : policy.allow) {
    if (r.kind == HostRule::Kind::kNetwork || !r.port) continue;
    if (ports.size() >= kMaxTransparentPorts) break;
    if (std::find(ports.begin(), ports.end(), *r.port) == ports.end()) ports.push_back(*r.port);
  }
  return ports;
}

}  // namespace carapace::egress
