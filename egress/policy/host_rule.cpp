#include "egress/policy/host_rule.h"

#include "egress/policy/host_name.h"
#include "egress/policy/quote.h"

namespace carapace::egress {
namespace {

Error rule_error(std::string_view text, std::string_view why) {
  return as_invalid_input(make_error("host rule " + quoted(text) + ": " + std::string(why)));
}

std::optional<uint16_t> parse_port(std::string_view text) {
  if (text.empty() || text.size() > 5 || text[0] == '0') return std::nullopt;
  uint32_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value > 65535) return std::nullopt;
  return static_cast<uint16_t>(value);
}

// Splits "host:port" into its parts. A bracketed IPv6 keeps its brackets in the host part
// ("[::1]/128:443" -> "[::1]/128", 443); unbracketed text with two or more colons is IPv6 with no
// port.
struct Split {
  std::string_view host;
  std::optional<std::string_view> port;
};

std::optional<Split> split_port(std::string_view text) {
  if (text.starts_with('[')) {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    // After "]": nothing, ":port", "/prefix" or "/prefix:port".
    const size_t colon = text.find(':', close);
    if (colon == std::string_view::npos) return Split{text, std::nullopt};
    return Split{text.substr(0, colon), text.substr(colon + 1)};
  }
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || text.find(':', colon + 1) != std::string_view::npos)
    return Split{text, std::nullopt};
  return Split{text.substr(0, colon), text.substr(colon + 1)};
}

bool is_network_text(std::string_view host) {
  return host.starts_with('[') || host.find('/') != std::string_view::npos ||
         host.find(':') != std::string_view::npos || IpAddress::parse(host).has_value();
}

}  // namespace

Result<HostRule> parse_host_rule(std::string_view text) {
  if (text.empty()) return rule_error(text, "is empty");
  auto split = split_port(text);
  if (!split) return rule_error(text, "'[' without a closing ']'");
  HostRule rule;
  rule.text = std::string(text);
  if (split->port) {
    rule.port = parse_port(*split->port);
    if (!rule.port) return rule_error(text, "the port is not a number from 1 to 65535");
  }
  const std::string_view host = split->host;
  if (host == "*") {
    rule.kind = HostRule::Kind::kAnyName;
    return rule;
  }
  if (host.starts_with("*.")) {
    const std::string_view suffix = host.substr(2);
    if (suffix.find('*') != std::string_view::npos)
      return rule_error(text, "'*' may only be the whole first label");
    auto name = normalize_host_name(suffix);
    if (!name) return rule_error(text, name.error().message);
    rule.kind = HostRule::Kind::kWildcard;
    rule.name = std::move(name).value();
    return rule;
  }
  if (host.find('*') != std::string_view::npos)
    return rule_error(text, "'*' may only be the whole first label");
  if (is_network_text(host)) {
    auto network = IpNetwork::parse(host);
    if (!network) return rule_error(text, network.error().message);
    rule.kind = HostRule::Kind::kNetwork;
    rule.network = network.value();
    return rule;
  }
  auto name = normalize_host_name(host);
  if (!name) return rule_error(text, name.error().message);
  rule.kind = HostRule::Kind::kName;
  rule.name = std::move(name).value();
  return rule;
}

}  // namespace carapace::egress
