// The egress policy: which frames a guest may send when its network is locked down
// (`--net ...,policy=deny,allow=CIDR:PROTO:PORT`). A pure function of the frame and the
// allowlist, so it is tested and fuzzed on its own.
//
// Allowed, and nothing else:
//   - ARP (ethertype 0x0806) with a complete 28-byte Ethernet/IPv4 body: the guest must resolve
//     its gateway.
//   - IPv6 neighbour discovery the link needs (RFC 4861): router solicitation, neighbour
//     solicitation and advertisement (ICMPv6 133, 135, 136, code 0), only with hop limit 255 (so
//     it cannot have crossed or be meant to cross a router), no extension headers, and a
//     link-scoped destination (fe80::/10 unicast or ff02::/16 multicast). NDP toward a global
//     address, MLD, router advertisements and redirects need an allowlist rule like any other
//     ICMPv6.
//   - IPv4 and IPv6 packets whose destination matches a rule: the address is inside the rule's
//     prefix, the protocol is the rule's (kAny matches every protocol; kIcmp is ICMP for IPv4 and
//     ICMPv6 for IPv6), and for TCP/UDP the destination port is the rule's (0: any port). A rule
//     with a port only ever matches TCP or UDP.
// Denied: everything else, including VLAN-tagged frames (802.1Q/802.1ad, not parsed), 802.3
// length-field frames, malformed or truncated headers, IPv6 routing headers with segments left
// (the real destination would not be the one checked), extension-header chains longer than
// kMaxIpv6ExtensionHeaders, and fragments: a non-first fragment carries no ports, so it passes
// only a rule with port 0 for its protocol (any); a first fragment must carry the whole port
// field. DHCP and DNS pass only if a rule names them (e.g. 255.255.255.255/32:udp:67).
// The source address is not checked: the policy limits where traffic goes, not who it claims to
// be from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "vmm/devices/net/net_config.h"

namespace carapace::net {

// At most this many IPv6 extension headers are walked; a longer chain is denied.
inline constexpr int kMaxIpv6ExtensionHeaders = 8;

// Why a frame was let through or dropped. Values index NetCounters::tx_dropped_policy.
enum class EgressVerdict : uint8_t {
  kAllow = 0,
  kDenyEthertype,        // not ARP, IPv4 or IPv6 (includes 802.3 length-field frames)
  kDenyVlan,             // 802.1Q / 802.1ad tagged
  kDenyMalformed,        // truncated or inconsistent Ethernet/ARP/IP/L4 header
  kDenyExtensionHeader,  // IPv6 chain too long, routing header in use, or no parseable end
  kDenyFragment,         // a non-first fragment with no port-less rule for its protocol
  kDenyNoRule,           // well-formed, but no rule matches its destination
};
inline constexpr size_t kEgressVerdictCount = 7;

const char* egress_verdict_name(EgressVerdict v);

// `frame` is a whole Ethernet frame (destination MAC first), without the virtio header.
EgressVerdict check_egress(std::span<const uint8_t> frame, const std::vector<EgressRule>& rules);

}  // namespace carapace::net
