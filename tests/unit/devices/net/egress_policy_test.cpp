// check_egress: the allowlist on guest TX. IPv4/IPv6, ports, prefixes, fragments, extension
// headers, neighbour discovery, malformed and truncated packets.
#include "vmm/devices/net/egress_policy.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tests/unit/devices/net/frame_builder.h"
#include "vmm/cli/device_args.h"

namespace carapace::net {
namespace {

using namespace test;
using V = EgressVerdict;

std::vector<EgressRule> rules(std::initializer_list<const char*> texts) {
  std::vector<EgressRule> out;
  for (const char* t : texts) {
    auto r = parse_egress_rule(t);
    EXPECT_TRUE(r.ok()) << t;
    if (r.ok()) out.push_back(*r);
  }
  return out;
}

V check(const Bytes& frame, const std::vector<EgressRule>& r) {
  return check_egress(frame, r);
}

// ---- Ethernet level ----

TEST(EgressPolicy, ArpIsAllowedWithoutRules) {
  EXPECT_EQ(check(eth(0x0806, arp_body()), {}), V::kAllow);
}

TEST(EgressPolicy, MalformedArpIsDenied) {
  Bytes body = arp_body();
  body.resize(27);
  EXPECT_EQ(check(eth(0x0806, body), {}), V::kDenyMalformed);
  Bytes wrong = arp_body();
  wrong[1] = 6;  // hardware type IEEE 802, not Ethernet
  EXPECT_EQ(check(eth(0x0806, wrong), {}), V::kDenyMalformed);
  Bytes v6 = arp_body();
  v6[5] = 16;  // protocol length
  EXPECT_EQ(check(eth(0x0806, v6), {}), V::kDenyMalformed);
}

TEST(EgressPolicy, RuntFramesAreMalformed) {
  EXPECT_EQ(check({}, rules({"0.0.0.0/0:any:any"})), V::kDenyMalformed);
  EXPECT_EQ(check(Bytes(13, 0), rules({"0.0.0.0/0:any:any"})), V::kDenyMalformed);
}

TEST(EgressPolicy, OtherEthertypesAreDenied) {
  auto all = rules({"0.0.0.0/0:any:any", "::/0:any:any"});
  EXPECT_EQ(check(eth(0x88b5, Bytes(46, 0)), all), V::kDenyEthertype);  // local experimental
  EXPECT_EQ(check(eth(0x0040, Bytes(64, 0)), all), V::kDenyEthertype);  // 802.3 length field
  EXPECT_EQ(check(eth(0x8035, arp_body()), all), V::kDenyEthertype);    // RARP
}

TEST(EgressPolicy, VlanTaggedFramesAreDenied) {
  auto all = rules({"0.0.0.0/0:any:any"});
  Bytes inner = ipv4(kTcp, v4("10.0.0.1"), tcp(443));
  for (uint16_t tpid : {0x8100, 0x88a8, 0x9100}) {
    // TPID, TCI, then the real ethertype and packet.
    Bytes payload = {0x00, 0x05, 0x08, 0x00};
    payload.insert(payload.end(), inner.begin() + 14, inner.end());
    EXPECT_EQ(check(eth(tpid, payload), all), V::kDenyVlan) << tpid;
  }
}

// ---- IPv4 ----

TEST(EgressPolicy, Ipv4PrefixProtocolAndPort) {
  auto r = rules({"10.0.0.0/8:tcp:443"});
  EXPECT_EQ(check(ipv4(kTcp, v4("10.1.2.3"), tcp(443)), r), V::kAllow);
  EXPECT_EQ(check(ipv4(kTcp, v4("10.255.255.255"), tcp(443)), r), V::kAllow);
  EXPECT_EQ(check(ipv4(kTcp, v4("11.0.0.1"), tcp(443)), r), V::kDenyNoRule);
  EXPECT_EQ(check(ipv4(kTcp, v4("9.255.255.255"), tcp(443)), r), V::kDenyNoRule);
  EXPECT_EQ(check(ipv4(kTcp, v4("10.1.2.3"), tcp(80)), r), V::kDenyNoRule);
  EXPECT_EQ(check(ipv4(kUdp, v4("10.1.2.3"), udp(443)), r), V::kDenyNoRule);
  EXPECT_EQ(check(ipv4(kIcmp, v4("10.1.2.3"), icmp_echo()), r), V::kDenyNoRule);
}

TEST(EgressPolicy, NoRulesDenyEveryIpPacket) {
  EXPECT_EQ(check(ipv4(kTcp, v4("1.2.3.4"), tcp(80)), {}), V::kDenyNoRule);
  EXPECT_EQ(check(ipv6(kTcp, v6("2001:db8::1"), tcp(80)), {}), V::kDenyNoRule);
}

TEST(EgressPolicy, Ipv4PrefixBoundaries) {
  auto r12 = rules({"172.16.0.0/12:tcp:any"});
  EXPECT_EQ(check(ipv4(kTcp, v4("172.16.0.0"), tcp(1)), r12), V::kAllow);
  EXPECT_EQ(check(ipv4(kTcp, v4("172.31.255.255"), tcp(1)), r12), V::kAllow);
  EXPECT_EQ(check(ipv4(kTcp, v4("172.32.0.0"), tcp(1)), r12), V::kDenyNoRule);
  EXPECT_EQ(check(ipv4(kTcp, v4("172.15.255.255"), tcp(1)), r12), V::kDenyNoRule);
  auto r32 = rules({"192.0.2.7/32:udp:53"});
  EXPECT_EQ(check(ipv4(kUdp, v4("192.0.2.7"), udp(53)), r32), V::kAllow);
  EXPECT_EQ(check(ipv4(kUdp, v4("192.0.2.6"), udp(53)), r32), V::kDenyNoRule);
  EXPECT_EQ(check(ipv4(kUdp, v4("192.0.2.8"), udp(53)), r32), V::kDenyNoRule);
  auto r0 = rules({"0.0.0.0/0:tcp:22"});
  EXPECT_EQ(check(ipv4(kTcp, v4("255.255.255.255"), tcp(22)), r0), V::kAllow);
  EXPECT_EQ(check(ipv4(kTcp, v4("0.0.0.0"), tcp(22)), r0), V::kAllow);
  // Host bits in the rule are cleared by the parser: 10.1.2.3/8 means 10.0.0.0/8.
  auto host_bits = rules({"10.1.2.3/8:tcp:any"});
  EXPECT_EQ(check(ipv4(kTcp, v4("10.200.0.1"), tcp(5)), host_bits), V::kAllow);
}

TEST(EgressPolicy, ProtocolAnyMatchesEveryProtocol) {
  auto r = rules({"10.0.0.0/8:any:any"});
  EXPECT_EQ(check(ipv4(kTcp, v4("10.0.0.1"), tcp(1)), r), V::kAllow);
  EXPECT_EQ(check(ipv4(kUdp, v4("10.0.0.1"), udp(1)), r), V::kAllow);
  EXPECT_EQ(check(ipv4(kIcmp, v4("10.0.0.1"), icmp_echo()), r), V::kAllow);
  EXPECT_EQ(check(ipv4(47, v4("10.0.0.1"), Bytes(4, 0)), r), V::kAllow);  // GRE
}

TEST(EgressPolicy, IcmpRuleMatchesIcmpOnly) {
  auto r = rules({"0.0.0.0/0:icmp:any", "::/0:icmp:any"});
  EXPECT_EQ(check(ipv4(kIcmp, v4("8.8.8.8"), icmp_echo()), r), V::kAllow);
  EXPECT_EQ(check(ipv4(kTcp, v4("8.8.8.8"), tcp(1)), r), V::kDenyNoRule);
  EXPECT_EQ(check(ipv6(kIcmpv6, v6("2001:db8::1"), icmp_echo()), r), V::kAllow);
  // ICMPv4's number inside IPv6 is not ICMP.
  EXPECT_EQ(check(ipv6(kIcmp, v6("2001:db8::1"), icmp_echo()), r), V::kDenyNoRule);
  EXPECT_EQ(check(ipv4(kIcmpv6, v4("8.8.8.8"), icmp_echo()), r), V::kDenyNoRule);
}

TEST(EgressPolicy, FamiliesDoNotCrossMatch) {
  auto r4 = rules({"0.0.0.0/0:any:any"});
  EXPECT_EQ(check(ipv6(kTcp, v6("::ffff:10.0.0.1"), tcp(1)), r4), V::kDenyNoRule);
  auto r6 = rules({"::/0:any:any"});
  EXPECT_EQ(check(ipv4(kTcp, v4("10.0.0.1"), tcp(1)), r6), V::kDenyNoRule);
}

TEST(EgressPolicy, DhcpAndDnsOnlyWhenNamed) {
  auto web = rules({"0.0.0.0/0:tcp:443"});
  const Bytes dhcp = ipv4(kUdp, v4("255.255.255.255"), udp(67));
  const Bytes dns = ipv4(kUdp, v4("8.8.8.8"), udp(53));
  EXPECT_EQ(check(dhcp, web), V::kDenyNoRule);
  EXPECT_EQ(check(dns, web), V::kDenyNoRule);
  auto named = rules({"255.255.255.255/32:udp:67", "8.8.8.8/32:udp:53"});
  EXPECT_EQ(check(dhcp, named), V::kAllow);
  EXPECT_EQ(check(dns, named), V::kAllow);
  EXPECT_EQ(check(ipv4(kTcp, v4("8.8.8.8"), tcp(53)), named), V::kDenyNoRule);
}

TEST(EgressPolicy, Ipv4OptionsShiftThePorts) {
  auto r = rules({"10.0.0.0/8:tcp:443"});
  EXPECT_EQ(check(ipv4(kTcp, v4("10.0.0.1"), tcp(443), 0, 2), r), V::kAllow);
  EXPECT_EQ(check(ipv4(kTcp, v4("10.0.0.1"), tcp(443), 0, 10), r), V::kAllow);  // IHL 15
  // The NOP option bytes (0x0101 = 257) must not be read as the port.
  auto r257 = rules({"10.0.0.0/8:tcp:257"});
  EXPECT_EQ(check(ipv4(kTcp, v4("10.0.0.1"), tcp(80), 0, 2), r257), V::kDenyNoRule);
}

TEST(EgressPolicy, EthernetPaddingAfterTheIpPacketIsFine) {
  Bytes f = ipv4(kUdp, v4("10.0.0.1"), udp(53));
  f.resize(60, 0);  // minimum Ethernet frame
  EXPECT_EQ(check(f, rules({"10.0.0.0/8:udp:53"})), V::kAllow);
}

TEST(EgressPolicy, MalformedIpv4IsDenied) {
  auto all = rules({"0.0.0.0/0:any:any"});
  Bytes good = ipv4(kTcp, v4("10.0.0.1"), tcp(443));
  ASSERT_EQ(check(good, all), V::kAllow);
  Bytes f = good;
  f[14] = 0x55;  // version 5
  EXPECT_EQ(check(f, all), V::kDenyMalformed);
  f = good;
  f[14] = 0x44;  // IHL 4 (16 bytes)
  EXPECT_EQ(check(f, all), V::kDenyMalformed);
  f = good;
  put16(f, 16, static_cast<uint16_t>(f.size() - 14 + 1));  // total length past the frame
  EXPECT_EQ(check(f, all), V::kDenyMalformed);
  f = good;
  put16(f, 16, 19);  // total length below the header
  EXPECT_EQ(check(f, all), V::kDenyMalformed);
  f = good;
  f[14] = 0x4f;  // IHL 15 (60 bytes) but the packet is 40
  EXPECT_EQ(check(f, all), V::kDenyMalformed);
}

TEST(EgressPolicy, TruncatedTransportHeadersAreDenied) {
  auto r = rules({"0.0.0.0/0:tcp:443", "0.0.0.0/0:udp:53"});
  Bytes short_tcp = tcp(443);
  short_tcp.resize(19);
  EXPECT_EQ(check(ipv4(kTcp, v4("10.0.0.1"), short_tcp), r), V::kDenyMalformed);
  Bytes short_udp = udp(53);
  short_udp.resize(4);
  EXPECT_EQ(check(ipv4(kUdp, v4("10.0.0.1"), short_udp), r), V::kDenyMalformed);
  // The IP total length, not the frame, bounds the transport header.
  Bytes f = ipv4(kTcp, v4("10.0.0.1"), tcp(443));
  put16(f, 16, 20 + 10);
  EXPECT_EQ(check(f, r), V::kDenyMalformed);
}

TEST(EgressPolicy, Ipv4Fragments) {
  auto port_rule = rules({"10.0.0.0/8:tcp:443"});
  // First fragment (MF, offset 0) with the whole TCP header: judged by its port.
  EXPECT_EQ(check(ipv4(kTcp, v4("10.0.0.1"), tcp(443), 0x2000), port_rule), V::kAllow);
  EXPECT_EQ(check(ipv4(kTcp, v4("10.0.0.1"), tcp(80), 0x2000), port_rule), V::kDenyNoRule);
  // A first fragment that cuts the TCP header short (RFC 1858 tiny fragment).
  EXPECT_EQ(check(ipv4(kTcp, v4("10.0.0.1"), Bytes(8, 0), 0x2000), port_rule), V::kDenyMalformed);
  // Non-first fragments have no ports.
  const Bytes tail = ipv4(kTcp, v4("10.0.0.1"), Bytes(64, 0xab), 0x0003);
  const Bytes last_tail = ipv4(kTcp, v4("10.0.0.1"), Bytes(64, 0xab), 0x2003);
  EXPECT_EQ(check(tail, port_rule), V::kDenyFragment);
  EXPECT_EQ(check(last_tail, port_rule), V::kDenyFragment);
  EXPECT_EQ(check(tail, rules({"10.0.0.0/8:tcp:any"})), V::kAllow);
  EXPECT_EQ(check(tail, rules({"10.0.0.0/8:any:any"})), V::kAllow);
  EXPECT_EQ(check(tail, rules({"10.0.0.0/8:udp:any"})), V::kDenyFragment);
  EXPECT_EQ(check(tail, rules({"11.0.0.0/8:tcp:any"})), V::kDenyFragment);
}

// ---- IPv6 ----

TEST(EgressPolicy, Ipv6PrefixProtocolAndPort) {
  auto r = rules({"2001:db8::/32:tcp:443"});
  EXPECT_EQ(check(ipv6(kTcp, v6("2001:db8::1"), tcp(443)), r), V::kAllow);
  EXPECT_EQ(check(ipv6(kTcp, v6("2001:db8:ffff:ffff::1"), tcp(443)), r), V::kAllow);
  EXPECT_EQ(check(ipv6(kTcp, v6("2001:db9::1"), tcp(443)), r), V::kDenyNoRule);
  EXPECT_EQ(check(ipv6(kTcp, v6("2001:db8::1"), tcp(80)), r), V::kDenyNoRule);
  EXPECT_EQ(check(ipv6(kUdp, v6("2001:db8::1"), udp(443)), r), V::kDenyNoRule);
  auto odd = rules({"2001:db8:8000::/33:udp:53"});
  EXPECT_EQ(check(ipv6(kUdp, v6("2001:db8:8000::1"), udp(53)), odd), V::kAllow);
  EXPECT_EQ(check(ipv6(kUdp, v6("2001:db8:7fff::1"), udp(53)), odd), V::kDenyNoRule);
  auto exact = rules({"2001:db8::53/128:udp:53"});
  EXPECT_EQ(check(ipv6(kUdp, v6("2001:db8::53"), udp(53)), exact), V::kAllow);
  EXPECT_EQ(check(ipv6(kUdp, v6("2001:db8::52"), udp(53)), exact), V::kDenyNoRule);
}

TEST(EgressPolicy, Ipv6ExtensionHeadersAreWalked) {
  auto r = rules({"2001:db8::/32:tcp:443"});
  const auto dst = v6("2001:db8::1");
  EXPECT_EQ(check(ipv6(kHopByHop, dst, cat(ext(kDestOpts), cat(ext(kTcp, 1), tcp(443)))), r),
            V::kAllow);
  EXPECT_EQ(check(ipv6(kHopByHop, dst, cat(ext(kDestOpts), cat(ext(kTcp, 1), tcp(80)))), r),
            V::kDenyNoRule);
  EXPECT_EQ(check(ipv6(kAuth, dst, cat(auth(kTcp), tcp(443))), r), V::kAllow);
  // A routing header already done (segments left 0) is harmless.
  EXPECT_EQ(check(ipv6(kRouting, dst, cat(routing(kTcp, 0), tcp(443))), r), V::kAllow);
}

TEST(EgressPolicy, Ipv6RoutingHeaderInUseIsDenied) {
  auto all = rules({"::/0:any:any"});
  EXPECT_EQ(check(ipv6(kRouting, v6("2001:db8::1"), cat(routing(kTcp, 1), tcp(443))), all),
            V::kDenyExtensionHeader);
}

TEST(EgressPolicy, Ipv6ExtensionHeaderChainIsBounded) {
  auto all = rules({"::/0:any:any"});
  auto chain = [](int n) {
    Bytes payload = tcp(443);
    for (int i = 0; i < n; ++i)
      payload = cat(ext(i == 0 ? kTcp : kDestOpts), payload);
    return ipv6(n == 0 ? kTcp : kDestOpts, v6("2001:db8::1"), payload);
  };
  EXPECT_EQ(check(chain(kMaxIpv6ExtensionHeaders), all), V::kAllow);
  EXPECT_EQ(check(chain(kMaxIpv6ExtensionHeaders + 1), all), V::kDenyExtensionHeader);
  EXPECT_EQ(check(chain(200), all), V::kDenyExtensionHeader);
}

TEST(EgressPolicy, Ipv6Fragments) {
  auto port_rule = rules({"2001:db8::/32:udp:53"});
  const auto dst = v6("2001:db8::1");
  EXPECT_EQ(check(ipv6(kFragment, dst, cat(frag6(kUdp, 0, true), udp(53))), port_rule), V::kAllow);
  EXPECT_EQ(check(ipv6(kFragment, dst, cat(frag6(kUdp, 0, true), udp(54))), port_rule),
            V::kDenyNoRule);
  EXPECT_EQ(check(ipv6(kFragment, dst, cat(frag6(kUdp, 0, true), Bytes(4, 0))), port_rule),
            V::kDenyMalformed);
  const Bytes tail = ipv6(kFragment, dst, cat(frag6(kUdp, 185, false), Bytes(40, 0xcd)));
  EXPECT_EQ(check(tail, port_rule), V::kDenyFragment);
  EXPECT_EQ(check(tail, rules({"2001:db8::/32:udp:any"})), V::kAllow);
  EXPECT_EQ(check(tail, rules({"2001:db8::/32:tcp:any"})), V::kDenyFragment);
}

TEST(EgressPolicy, Ipv6EspAndNoNextHeaderMatchOnlyAnyRules) {
  const auto dst = v6("2001:db8::1");
  const Bytes esp = ipv6(kEsp, dst, Bytes(32, 0x11));
  EXPECT_EQ(check(esp, rules({"2001:db8::/32:tcp:any"})), V::kDenyNoRule);
  EXPECT_EQ(check(esp, rules({"2001:db8::/32:any:any"})), V::kAllow);
  EXPECT_EQ(check(ipv6(kNoNext, dst, {}), rules({"2001:db8::/32:any:any"})), V::kAllow);
}

TEST(EgressPolicy, MalformedIpv6IsDenied) {
  auto all = rules({"::/0:any:any"});
  Bytes good = ipv6(kTcp, v6("2001:db8::1"), tcp(443));
  ASSERT_EQ(check(good, all), V::kAllow);
  Bytes f = good;
  f[14] = 0x40;  // version 4 behind the IPv6 ethertype
  EXPECT_EQ(check(f, all), V::kDenyMalformed);
  f = good;
  put16(f, 14 + 4, 21);  // payload length past the frame
  EXPECT_EQ(check(f, all), V::kDenyMalformed);
  // An extension header longer than the payload.
  Bytes claims_32 = ext(kTcp, 3);
  claims_32.resize(8);
  EXPECT_EQ(check(ipv6(kDestOpts, v6("2001:db8::1"), claims_32), all), V::kDenyMalformed);
  // Payload length 0 with a hop-by-hop header (a jumbogram, RFC 2675).
  f = ipv6(kHopByHop, v6("2001:db8::1"), cat(ext(kTcp), tcp(443)));
  put16(f, 14 + 4, 0);
  EXPECT_EQ(check(f, all), V::kDenyMalformed);
  // A header shorter than 40 bytes.
  f = good;
  f.resize(14 + 39);
  EXPECT_EQ(check(f, all), V::kDenyMalformed);
}

TEST(EgressPolicy, LinkLocalNeighbourDiscoveryIsAllowed) {
  const auto sn = v6("ff02::1:ff00:1");                               // solicited-node multicast
  EXPECT_EQ(check(ipv6(kIcmpv6, sn, ndp(135), 255), {}), V::kAllow);  // NS
  EXPECT_EQ(check(ipv6(kIcmpv6, v6("fe80::1"), ndp(135), 255), {}), V::kAllow);  // NUD
  EXPECT_EQ(check(ipv6(kIcmpv6, v6("fe80::1"), ndp(136), 255), {}), V::kAllow);  // NA
  EXPECT_EQ(check(ipv6(kIcmpv6, v6("ff02::1"), ndp(136), 255), {}), V::kAllow);
  EXPECT_EQ(check(ipv6(kIcmpv6, v6("ff02::2"), ndp(133), 255), {}), V::kAllow);  // RS
}

TEST(EgressPolicy, OtherNeighbourDiscoveryNeedsARule) {
  const auto sn = v6("ff02::1:ff00:1");
  EXPECT_EQ(check(ipv6(kIcmpv6, sn, ndp(135), 64), {}), V::kDenyNoRule);  // hop limit not 255
  EXPECT_EQ(check(ipv6(kIcmpv6, v6("2001:db8::1"), ndp(135), 255), {}), V::kDenyNoRule);
  EXPECT_EQ(check(ipv6(kIcmpv6, v6("ff05::2"), ndp(133), 255), {}), V::kDenyNoRule);  // site
  EXPECT_EQ(check(ipv6(kIcmpv6, v6("ff02::1"), ndp(134), 255), {}), V::kDenyNoRule);  // RA
  EXPECT_EQ(check(ipv6(kIcmpv6, v6("ff02::1"), ndp(137), 255), {}), V::kDenyNoRule);  // redirect
  Bytes mld(28, 0);
  mld[0] = 143;  // MLDv2 report
  EXPECT_EQ(check(ipv6(kIcmpv6, v6("ff02::16"), mld, 1), {}), V::kDenyNoRule);
  Bytes short_ns = ndp(135);
  short_ns.resize(8);
  EXPECT_EQ(check(ipv6(kIcmpv6, sn, short_ns, 255), {}), V::kDenyNoRule);
  Bytes coded = ndp(135);
  coded[1] = 1;
  EXPECT_EQ(check(ipv6(kIcmpv6, sn, coded, 255), {}), V::kDenyNoRule);
  // Behind an extension header it is not plain NDP any more.
  EXPECT_EQ(check(ipv6(kDestOpts, sn, cat(ext(kIcmpv6), ndp(135)), 255), {}), V::kDenyNoRule);
  // ... but a rule can still allow it.
  EXPECT_EQ(
      check(ipv6(kIcmpv6, v6("2001:db8::1"), ndp(135), 255), rules({"2001:db8::/32:icmp:any"})),
      V::kAllow);
}

// ---- Robustness ----

TEST(EgressPolicy, EveryTruncationOfAHeaderIsDeniedAndSafe) {
  auto all = rules({"0.0.0.0/0:any:any", "::/0:any:any"});
  const std::vector<Bytes> frames = {
      eth(0x0806, arp_body()),
      ipv4(kTcp, v4("10.0.0.1"), tcp(443)),
      ipv4(kUdp, v4("10.0.0.1"), udp(53), 0, 3),
      ipv6(kTcp, v6("2001:db8::1"), tcp(443)),
      ipv6(kHopByHop, v6("2001:db8::1"), cat(ext(kFragment), cat(frag6(kUdp, 0, true), udp(53)))),
      ipv6(kIcmpv6, v6("ff02::1:ff00:1"), ndp(135), 255),
  };
  for (const Bytes& f : frames) {
    ASSERT_EQ(check(f, all), V::kAllow);
    for (size_t n = 0; n < f.size(); ++n) {
      // A right-sized copy, so ASan sees any read past the end.
      Bytes cut(f.begin(), f.begin() + static_cast<long>(n));
      EXPECT_NE(check(cut, all), V::kAllow) << "frame of " << f.size() << " cut to " << n;
    }
  }
}

TEST(EgressPolicy, ImpossibleRulesMatchNothing) {
  EgressRule r;
  r.prefix_len = 40;  // > 32 for IPv4: never produced by the parser
  r.protocol = EgressRule::Protocol::kAny;
  EXPECT_EQ(check(ipv4(kTcp, v4("0.0.0.0"), tcp(1)), {r}), V::kDenyNoRule);
  r.ipv6 = true;
  r.prefix_len = 255;
  EXPECT_EQ(check(ipv6(kTcp, v6("::"), tcp(1)), {r}), V::kDenyNoRule);
  // A port on a port-less protocol never matches (the parser refuses it too).
  EgressRule icmp_port;
  icmp_port.protocol = EgressRule::Protocol::kIcmp;
  icmp_port.port = 7;
  EXPECT_EQ(check(ipv4(kIcmp, v4("1.1.1.1"), icmp_echo()), {icmp_port}), V::kDenyNoRule);
}

TEST(EgressPolicy, VerdictNamesAreDistinct) {
  std::set<std::string> names;
  for (size_t i = 0; i < kEgressVerdictCount; ++i)
    names.insert(egress_verdict_name(static_cast<EgressVerdict>(i)));
  EXPECT_EQ(names.size(), kEgressVerdictCount);
}

}  // namespace
}  // namespace carapace::net
