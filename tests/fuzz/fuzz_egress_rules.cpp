// Fuzzes the egress policy's parsers and decisions (egress/policy): what an operator writes as a
// rule and what a sandboxed client writes as a CONNECT or absolute-form destination.
//
// Input: [mode:1] then
//   mode % 4 == 0: the rest as a host rule. An accepted rule re-parses from its text, and from
//     the canonical text of its fields, to the same kind, name, network and port; decide() and
//     check_address() on destinations built from it answer one line.
//   mode % 4 == 1: [port:2] then the rest as a destination host. An accepted name is a fixed
//     point of normalize_host_name and never an IP literal; an accepted literal's host is its
//     to_string(), which parses back to it. Both go through decide() and check_address().
//   mode % 4 == 2: the rest as an address literal and as a network: IpAddress::parse(to_string())
//     and the sockaddr form round-trip; a network contains its base and re-parses from
//     to_string(); classify_address() has a name for every answer.
//   mode % 4 == 3: the rest as policy lists, entries separated by '\n', "!" marking a deny entry,
//     then decisions on a fixed set of destinations.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "egress/policy/address_class.h"
#include "egress/policy/egress_policy.h"
#include "egress/policy/host_name.h"
#include "egress/policy/host_rule.h"
#include "egress/policy/ip_address.h"
#include "tests/fuzz/fuzz_memory.h"
#include "tests/fuzz/fuzz_modes.h"

using namespace carapace;
using namespace carapace::egress;
using carapace::fuzz::Input;

namespace {

std::string_view rest_of(const Input& in) {
  return {reinterpret_cast<const char*>(in.data()), in.size()};
}

void check_line(const std::string& s) {
  if (s.find('\n') != std::string::npos || s.find('\r') != std::string::npos) __builtin_trap();
}

void check_decision(const Decision& d) {
  if (d.reason.empty()) __builtin_trap();
  check_line(d.reason);
  check_line(d.rule);
}

const std::vector<IpAddress>& probe_addresses() {
  static const std::vector<IpAddress> probes = [] {
    std::vector<IpAddress> v;
    for (const char* text : {"127.0.0.1", "10.1.2.3", "169.254.169.254", "203.0.113.7", "::1",
                             "::ffff:10.1.2.3", "64:ff9b::7f00:1", "2001:db8::1", "fd00::1"})
      v.push_back(IpAddress::parse(text).value());
    return v;
  }();
  return probes;
}

void decide_all(const EgressPolicy& policy, const Destination& dest) {
  check_decision(decide(policy, dest));
  const std::vector<IpAddress>& probes = probe_addresses();
  const std::vector<IpAddress> host = {probes[3]};
  for (const IpAddress& a : probes)
    check_decision(check_address(policy, dest, a, host));
  if (dest.literal) check_decision(check_address(policy, dest, *dest.literal, host));
}

std::string canonical_text(const HostRule& r) {
  std::string host;
  switch (r.kind) {
    case HostRule::Kind::kName:
      host = r.name;
      break;
    case HostRule::Kind::kWildcard:
      host = "*." + r.name;
      break;
    case HostRule::Kind::kAnyName:
      host = "*";
      break;
    case HostRule::Kind::kNetwork:
      host = r.network.base.is_v4()
                 ? r.network.to_string()
                 : "[" + r.network.base.to_string() + "]/" + std::to_string(r.network.prefix);
      break;
  }
  return r.port ? host + ":" + std::to_string(*r.port) : host;
}

bool same_rule(const HostRule& a, const HostRule& b) {
  return a.kind == b.kind && a.name == b.name && a.port == b.port &&
         (a.kind != HostRule::Kind::kNetwork || a.network == b.network);
}

void fuzz_rule(const Input& in) {
  auto rule = parse_host_rule(rest_of(in));
  if (!rule) {
    if (rule.error().kind != ErrorKind::kInvalidInput) __builtin_trap();
    check_line(rule.error().message);
    return;
  }
  auto again = parse_host_rule(rule->text);
  if (!again || !same_rule(*rule, *again)) __builtin_trap();
  auto canonical = parse_host_rule(canonical_text(*rule));
  if (!canonical || !same_rule(*rule, *canonical)) __builtin_trap();

  EgressPolicy allow;
  allow.allow.push_back(*rule);
  EgressPolicy deny;
  deny.deny.push_back(*rule);
  const uint16_t port = rule->port.value_or(443);
  std::vector<Destination> dests;
  if (rule->kind == HostRule::Kind::kName) dests.push_back({rule->name, port, std::nullopt});
  if (rule->kind == HostRule::Kind::kAnyName) dests.push_back({"a.example", port, std::nullopt});
  if (rule->kind == HostRule::Kind::kWildcard) {
    dests.push_back({"a." + rule->name, port, std::nullopt});
    dests.push_back({rule->name, port, std::nullopt});
  }
  if (rule->kind == HostRule::Kind::kNetwork) {
    const IpAddress base = rule->network.base;
    dests.push_back({base.to_string(), port, base});
  }
  for (const Destination& d : dests) {
    decide_all(allow, d);
    decide_all(deny, d);
    // A rule denies everything it matches, whatever else allows it.
    EgressPolicy both = allow;
    both.deny.push_back(*rule);
    if (decide(both, d).allowed) __builtin_trap();
  }
}

void fuzz_destination(Input& in) {
  const auto port = in.take<uint16_t>();
  const std::string_view host = rest_of(in);
  auto dest = parse_destination(host, port);
  if (!dest) {
    if (dest.error().kind != ErrorKind::kInvalidInput) __builtin_trap();
    check_line(dest.error().message);
    return;
  }
  if (dest->port != port || port == 0) __builtin_trap();
  if (dest->literal) {
    if (dest->host != dest->literal->to_string()) __builtin_trap();
    if (IpAddress::parse(dest->host) != dest->literal) __builtin_trap();
  } else {
    if (IpAddress::parse(dest->host)) __builtin_trap();
    auto again = normalize_host_name(dest->host);
    if (!again || *again != dest->host) __builtin_trap();
  }
  static const EgressPolicy policy =
      EgressPolicy::parse({"*.example", "pypi.org:443", "10.0.0.0/8", "[2001:db8::]/32:443"},
                          {"evil.example", "10.9.0.0/16"})
          .value();
  decide_all(policy, *dest);
}

void fuzz_address(const Input& in) {
  const std::string_view text = rest_of(in);
  if (auto a = IpAddress::parse(text)) {
    if (IpAddress::parse(a->to_string()) != a) __builtin_trap();
    sockaddr_storage ss{};
    const socklen_t len = a->to_sockaddr(80, &ss);
    if (IpAddress::from_sockaddr(reinterpret_cast<const sockaddr*>(&ss), len) != a)
      __builtin_trap();
    if (address_class_name(classify_address(*a)) == nullptr) __builtin_trap();
    if (auto inner = embedded_v4(*a); inner && !inner->is_v4()) __builtin_trap();
    if (auto m = a->mapped_v4(); m && classify_address(*m) != classify_address(*a))
      __builtin_trap();
  }
  auto net = IpNetwork::parse(text);
  if (!net) {
    if (net.error().kind != ErrorKind::kInvalidInput) __builtin_trap();
    check_line(net.error().message);
    return;
  }
  if (!net->contains(net->base)) __builtin_trap();
  auto again = IpNetwork::parse(net->to_string());
  if (!again || !(*again == *net)) __builtin_trap();
}

void fuzz_policy(const Input& in) {
  std::vector<std::string> allow, deny;
  std::string_view rest = rest_of(in);
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view entry = rest.substr(0, nl);
    if (entry.starts_with('!'))
      deny.emplace_back(entry.substr(1));
    else
      allow.emplace_back(entry);
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  auto policy = EgressPolicy::parse(allow, deny);
  if (!policy) {
    check_line(policy.error().message);
    return;
  }
  if (policy->allow_texts() != allow || policy->deny_texts() != deny) __builtin_trap();
  for (const char* host : {"pypi.org", "files.pythonhosted.org", "203.0.113.7", "::1", "10.1.2.3",
                           "::ffff:169.254.169.254", "xn--bcher-kva.example"}) {
    for (uint16_t port : {uint16_t{80}, uint16_t{443}}) {
      auto dest = parse_destination(host, port);
      if (!dest) __builtin_trap();
      decide_all(*policy, *dest);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::run_one_mode(data, size, {fuzz_rule, fuzz_destination, fuzz_address, fuzz_policy});
}
