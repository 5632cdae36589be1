#include "vmm/devices/net/egress_policy.h"

#include <cstring>

namespace carapace::net {

namespace {

constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeArp = 0x0806;
constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
constexpr uint16_t kEtherTypeVlan = 0x8100;     // 802.1Q
constexpr uint16_t kEtherTypeQinQ = 0x88a8;     // 802.1ad
constexpr uint16_t kEtherTypeQinQOld = 0x9100;  // pre-standard double tagging

constexpr uint8_t kProtoIcmp = 1;
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr uint8_t kProtoIcmpv6 = 58;

// IPv6 next-header values that are extension headers (RFC 8200 §4, IANA "IPv6 Extension Header
// Types"). ESP (50) is not walked: what follows it is encrypted, so it counts as the protocol.
constexpr uint8_t kExtHopByHop = 0, kExtRouting = 43, kExtFragment = 44, kExtAuth = 51,
                  kExtDestOpts = 60, kExtMobility = 135, kExtHip = 139, kExtShim6 = 140;

constexpr size_t kArpBodyLen = 28;  // Ethernet/IPv4 ARP (RFC 826)
constexpr size_t kIpv4MinHeader = 20;
constexpr size_t kIpv6Header = 40;
constexpr size_t kTcpMinHeader = 20;
constexpr size_t kUdpHeader = 8;

uint16_t be16(std::span<const uint8_t> b, size_t off) {
  return static_cast<uint16_t>(b[off] << 8 | b[off + 1]);
}

// What the IP parse found, for matching against rules.
struct Destination {
  bool ipv6 = false;
  std::span<const uint8_t> addr;  // 4 or 16 bytes, network order
  uint8_t protocol = 0;           // IPv4 protocol / IPv6 final next header
  bool fragment_tail = false;     // a non-first fragment: no L4 header, no ports
  bool has_port = false;          // TCP or UDP with its header present
  uint16_t port = 0;              // destination port when has_port
};

// The parse either ends in a Destination or in a deny verdict.
struct Parsed {
  EgressVerdict deny = EgressVerdict::kAllow;  // kAllow: `dest` is valid
  Destination dest;
  bool ndp = false;  // link-scoped neighbour discovery, allowed without a rule
};

Parsed deny(EgressVerdict v) {
  Parsed p;
  p.deny = v;
  return p;
}

bool prefix_matches(const EgressRule& rule, std::span<const uint8_t> addr) {
  const size_t bits = addr.size() * 8;
  if (rule.prefix_len > bits) return false;  // an impossible rule matches nothing
  const size_t whole = rule.prefix_len / 8, rest = rule.prefix_len % 8;
  if (std::memcmp(rule.addr.data(), addr.data(), whole) != 0) return false;
  if (rest == 0) return true;
  const uint8_t mask = static_cast<uint8_t>(0xff00u >> rest);
  return (rule.addr[whole] & mask) == (addr[whole] & mask);
}

bool protocol_matches(EgressRule::Protocol p, const Destination& d) {
  switch (p) {
    case EgressRule::Protocol::kAny:
      return true;
    case EgressRule::Protocol::kTcp:
      return d.protocol == kProtoTcp;
    case EgressRule::Protocol::kUdp:
      return d.protocol == kProtoUdp;
    case EgressRule::Protocol::kIcmp:
      return d.protocol == (d.ipv6 ? kProtoIcmpv6 : kProtoIcmp);
  }
  return false;
}

bool rule_matches(const EgressRule& rule, const Destination& d) {
  if (rule.ipv6 != d.ipv6 || !prefix_matches(rule, d.addr)) return false;
  if (!protocol_matches(rule.protocol, d)) return false;
  if (rule.port == 0) return true;  // any port, fragments included
  // A port rule needs a port to compare: TCP/UDP with its header, never a fragment tail.
  return d.has_port && d.port == rule.port;
}

// Fills the port of a TCP/UDP packet from its L4 bytes (everything after the IP headers, bounded
// by the IP length). Returns false when the header is cut short.
bool read_port(Destination& d, std::span<const uint8_t> l4) {
  if (d.fragment_tail || (d.protocol != kProtoTcp && d.protocol != kProtoUdp)) return true;
  // The whole header, not just the port field: a first fragment that splits the L4 header (the
  // "tiny fragment" trick, RFC 1858) is refused.
  if (l4.size() < (d.protocol == kProtoTcp ? kTcpMinHeader : kUdpHeader)) return false;
  d.has_port = true;
  d.port = be16(l4, 2);
  return true;
}

Parsed parse_ipv4(std::span<const uint8_t> ip) {
  if (ip.size() < kIpv4MinHeader) return deny(EgressVerdict::kDenyMalformed);
  const size_t ihl = size_t{ip[0] & 0x0fu} * 4;
  if ((ip[0] >> 4) != 4 || ihl < kIpv4MinHeader) return deny(EgressVerdict::kDenyMalformed);
  const size_t total = be16(ip, 2);
  // Bytes past `total` are Ethernet padding; a total past the frame is a lie.
  if (total < ihl || total > ip.size()) return deny(EgressVerdict::kDenyMalformed);
  Parsed p;
  p.dest.ipv6 = false;
  p.dest.addr = ip.subspan(16, 4);
  p.dest.protocol = ip[9];
  p.dest.fragment_tail = (be16(ip, 6) & 0x1fff) != 0;  // fragment offset (RFC 791)
  if (!read_port(p.dest, ip.subspan(ihl, total - ihl))) return deny(EgressVerdict::kDenyMalformed);
  return p;
}

bool link_scoped(std::span<const uint8_t> a) {
  return (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) || (a[0] == 0xff && a[1] == 0x02);
}

// RFC 4861 messages a host needs on its link: RS (133), NS (135), NA (136), with their minimum
// lengths (§4.1, §4.3, §4.4), hop limit 255 (§6.1.1, §7.1.1) and a link-scoped destination.
bool is_link_ndp(std::span<const uint8_t> icmp, uint8_t hop_limit, std::span<const uint8_t> dst) {
  if (icmp.size() < 8 || hop_limit != 255 || !link_scoped(dst) || icmp[1] != 0) return false;
  switch (icmp[0]) {
    case 133:
      return true;
    case 135:
    case 136:
      return icmp.size() >= 24;
    default:
      return false;
  }
}

Parsed parse_ipv6(std::span<const uint8_t> ip) {
  if (ip.size() < kIpv6Header || (ip[0] >> 4) != 6) return deny(EgressVerdict::kDenyMalformed);
  const size_t payload_len = be16(ip, 4);
  // payload_len 0 with a jumbo option (RFC 2675) ends up here too: the walk finds no room for
  // the hop-by-hop header.
  if (payload_len > ip.size() - kIpv6Header) return deny(EgressVerdict::kDenyMalformed);
  const std::span<const uint8_t> payload = ip.subspan(kIpv6Header, payload_len);
  Parsed p;
  p.dest.ipv6 = true;
  p.dest.addr = ip.subspan(24, 16);
  uint8_t next = ip[6];
  size_t pos = 0;
  int headers = 0;
  for (bool walking = true; walking;) {
    const size_t left = payload.size() - pos;
    switch (next) {
      case kExtHopByHop:
      case kExtRouting:
      case kExtDestOpts:
      case kExtMobility:
      case kExtHip:
      case kExtShim6:
      case kExtFragment:
      case kExtAuth: {
        if (++headers > kMaxIpv6ExtensionHeaders) return deny(EgressVerdict::kDenyExtensionHeader);
        if (left < 8) return deny(EgressVerdict::kDenyMalformed);
        size_t len = 8;  // the fragment header's fixed size
        if (next == kExtAuth) {
          len = (size_t{payload[pos + 1]} + 2) * 4;  // RFC 4302 §2.2: 4-octet units, minus 2
        } else if (next != kExtFragment) {
          len = (size_t{payload[pos + 1]} + 1) * 8;  // RFC 8200 §4.3: 8-octet units, minus 1
        }
        if (len > left) return deny(EgressVerdict::kDenyMalformed);
        // A routing header with segments left sends the packet on to addresses other than the
        // destination we check (RFC 8200 §4.4).
        if (next == kExtRouting && payload[pos + 3] != 0)
          return deny(EgressVerdict::kDenyExtensionHeader);
        if (next == kExtFragment && (be16(payload, pos + 2) >> 3) != 0) {
          // A non-first fragment: what follows is the middle of the fragmentable part.
          p.dest.fragment_tail = true;
          walking = false;
        }
        next = payload[pos];
        pos += len;
        break;
      }
      default:
        walking = false;  // the upper-layer protocol (or ESP / No Next Header)
        break;
    }
  }
  p.dest.protocol = next;
  const std::span<const uint8_t> l4 = payload.subspan(pos);
  if (!read_port(p.dest, l4)) return deny(EgressVerdict::kDenyMalformed);
  p.ndp = next == kProtoIcmpv6 && headers == 0 && is_link_ndp(l4, ip[7], p.dest.addr);
  return p;
}

bool is_ipv4_arp(std::span<const uint8_t> body) {
  // htype 1 (Ethernet), ptype IPv4, hlen 6, plen 4 (RFC 826).
  return body.size() >= kArpBodyLen && be16(body, 0) == 1 && be16(body, 2) == kEtherTypeIpv4 &&
         body[4] == 6 && body[5] == 4;
}

}  // namespace

const char* egress_verdict_name(EgressVerdict v) {
  switch (v) {
    case EgressVerdict::kAllow:
      return "allow";
    case EgressVerdict::kDenyEthertype:
      return "ethertype";
    case EgressVerdict::kDenyVlan:
      return "vlan";
    case EgressVerdict::kDenyMalformed:
      return "malformed";
    case EgressVerdict::kDenyExtensionHeader:
      return "ipv6-extension-header";
    case EgressVerdict::kDenyFragment:
      return "fragment";
    case EgressVerdict::kDenyNoRule:
      return "no-rule";
  }
  return "?";
}

EgressVerdict check_egress(std::span<const uint8_t> frame, const std::vector<EgressRule>& rules) {
  constexpr size_t kEthHeader = 14;
  if (frame.size() < kEthHeader) return EgressVerdict::kDenyMalformed;
  const uint16_t ethertype = be16(frame, 12);
  const std::span<const uint8_t> body = frame.subspan(kEthHeader);
  Parsed p;
  switch (ethertype) {
    case kEtherTypeArp:
      return is_ipv4_arp(body) ? EgressVerdict::kAllow : EgressVerdict::kDenyMalformed;
    case kEtherTypeVlan:
    case kEtherTypeQinQ:
    case kEtherTypeQinQOld:
      return EgressVerdict::kDenyVlan;
    case kEtherTypeIpv4:
      p = parse_ipv4(body);
      break;
    case kEtherTypeIpv6:
      p = parse_ipv6(body);
      break;
    default:
      // Everything else, 802.3 length fields (< 0x0600) included.
      return EgressVerdict::kDenyEthertype;
  }
  if (p.deny != EgressVerdict::kAllow) return p.deny;
  if (p.ndp) return EgressVerdict::kAllow;
  for (const EgressRule& rule : rules)
    if (rule_matches(rule, p.dest)) return EgressVerdict::kAllow;
  return p.dest.fragment_tail ? EgressVerdict::kDenyFragment : EgressVerdict::kDenyNoRule;
}

}  // namespace carapace::net
