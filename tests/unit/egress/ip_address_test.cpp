// IpAddress and IpNetwork: only the strict literal spellings parse (no octal, hex, short or
// integer IPv4 forms, no zone ids), sockaddr and text round trips, and prefix containment
// including the IPv4-mapped forms.
#include "egress/policy/ip_address.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>

namespace carapace::egress {
namespace {

IpAddress v6(const char* text) {
  auto a = IpAddress::parse(text);
  EXPECT_TRUE(a.has_value()) << text;
  return a.value_or(IpAddress{});
}

TEST(IpAddressTest, ParsesDottedQuads) {
  auto a = IpAddress::parse("203.0.113.7");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->family, IpAddress::Family::kV4);
  EXPECT_EQ(*a, IpAddress::v4(203, 0, 113, 7));
  EXPECT_EQ(IpAddress::parse("0.0.0.0"), IpAddress::v4(0, 0, 0, 0));
  EXPECT_EQ(IpAddress::parse("255.255.255.255"), IpAddress::v4(255, 255, 255, 255));
  EXPECT_EQ(IpAddress::parse("10.0.0.1")->to_string(), "10.0.0.1");
}

TEST(IpAddressTest, RefusesEveryIpv4FormButTheDottedQuad) {
  for (const char* text :
       {"010.0.0.1", "127.0.0.01", "00.0.0.0",     "0x7f.0.0.1", "0x7f000001", "127.1",
        "127.0.1",   "2130706433", "017700000001", "256.0.0.1",  "1.2.3.4.",   ".1.2.3.4",
        "1.2.3.4.5", "1..2.3",     "1.2.3",        "1.2.3.-4",   "+1.2.3.4",   " 1.2.3.4",
        "1.2.3.4 ",  "1.2.3.4\n",  "1.2.3.1000",   "",           ".",          "a.b.c.d",
        "[1.2.3.4]", "1.2.3.4/32"}) {
    EXPECT_FALSE(IpAddress::parse(text)) << text;
  }
}

TEST(IpAddressTest, ParsesIpv6WithAndWithoutBrackets) {
  auto a = IpAddress::parse("2001:db8::1");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->family, IpAddress::Family::kV6);
  EXPECT_EQ(a->bytes[0], 0x20);
  EXPECT_EQ(a->bytes[1], 0x01);
  EXPECT_EQ(a->bytes[2], 0x0d);
  EXPECT_EQ(a->bytes[3], 0xb8);
  EXPECT_EQ(a->bytes[15], 1);
  EXPECT_EQ(IpAddress::parse("[2001:db8::1]"), a);
  EXPECT_EQ(IpAddress::parse("2001:DB8:0:0:0:0:0:1"), a);
  EXPECT_EQ(a->to_string(), "2001:db8::1");
  EXPECT_EQ(IpAddress::parse("[::1]")->to_string(), "::1");
  EXPECT_EQ(IpAddress::parse("::")->to_string(), "::");
  EXPECT_EQ(IpAddress::parse("::ffff:127.0.0.1")->to_string(), "::ffff:127.0.0.1");
}

TEST(IpAddressTest, RefusesZoneIdsAndMalformedIpv6) {
  std::string nul("::1\0junk", 8);
  for (std::string_view text :
       {std::string_view("fe80::1%eth0"), std::string_view("[fe80::1%25eth0]"),
        std::string_view("[::1"), std::string_view("::1]"), std::string_view("[]"),
        std::string_view("1:2:3:4:5:6:7:8:9"), std::string_view("2001:db8:::1"),
        std::string_view(":::"), std::string_view("[[::1]]"), std::string_view("::ffff:127.1"),
        std::string_view("::ffff:010.0.0.1"), std::string_view("g::1"), std::string_view(" ::1"),
        std::string_view(nul)}) {
    EXPECT_FALSE(IpAddress::parse(text)) << text;
  }
  EXPECT_FALSE(IpAddress::parse(std::string(100, ':')));
}

TEST(IpAddressTest, MappedV4OnlyForTheMappedPrefix) {
  EXPECT_EQ(v6("::ffff:169.254.169.254").mapped_v4(), IpAddress::v4(169, 254, 169, 254));
  EXPECT_EQ(v6("::ffff:7f00:1").mapped_v4(), IpAddress::v4(127, 0, 0, 1));
  EXPECT_FALSE(v6("::127.0.0.1").mapped_v4());
  EXPECT_FALSE(v6("::fffe:127.0.0.1").mapped_v4());
  EXPECT_FALSE(v6("1::ffff:127.0.0.1").mapped_v4());
  EXPECT_FALSE(IpAddress::v4(127, 0, 0, 1).mapped_v4());
}

TEST(IpAddressTest, SockaddrRoundTrips) {
  sockaddr_storage ss{};
  const IpAddress a4 = IpAddress::v4(192, 0, 2, 10);
  socklen_t len = a4.to_sockaddr(8080, &ss);
  ASSERT_EQ(len, sizeof(sockaddr_in));
  sockaddr_in in{};
  std::memcpy(&in, &ss, sizeof(in));
  EXPECT_EQ(in.sin_family, AF_INET);
  EXPECT_EQ(in.sin_port, htons(8080));
  EXPECT_EQ(in.sin_addr.s_addr, htonl(0xc000020a));
  EXPECT_EQ(IpAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), len), a4);
  EXPECT_FALSE(IpAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), len - 1));

  const IpAddress a6 = v6("2001:db8::2");
  len = a6.to_sockaddr(443, &ss);
  ASSERT_EQ(len, sizeof(sockaddr_in6));
  sockaddr_in6 in6{};
  std::memcpy(&in6, &ss, sizeof(in6));
  EXPECT_EQ(in6.sin6_family, AF_INET6);
  EXPECT_EQ(in6.sin6_port, htons(443));
  EXPECT_EQ(IpAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), len), a6);
  EXPECT_FALSE(IpAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), len - 1));

  ss.ss_family = AF_UNIX;
  EXPECT_FALSE(IpAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), sizeof(ss)));
  EXPECT_FALSE(IpAddress::from_sockaddr(nullptr, sizeof(ss)));
}

TEST(IpNetworkTest, ParsesNetworksAndBareAddresses) {
  auto n = IpNetwork::parse("10.0.0.0/8");
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(n->base, IpAddress::v4(10, 0, 0, 0));
  EXPECT_EQ(n->prefix, 8);
  EXPECT_EQ(n->to_string(), "10.0.0.0/8");
  EXPECT_EQ(IpNetwork::parse("203.0.113.7")->prefix, 32);
  EXPECT_EQ(IpNetwork::parse("0.0.0.0/0")->prefix, 0);
  EXPECT_EQ(IpNetwork::parse("fd00::/8")->to_string(), "fd00::/8");
  EXPECT_EQ(IpNetwork::parse("[fd00::]/8")->to_string(), "fd00::/8");
  EXPECT_EQ(IpNetwork::parse("[2001:db8::1]")->prefix, 128);
  EXPECT_EQ(IpNetwork::parse("::/0")->prefix, 0);
  EXPECT_EQ(IpNetwork::parse("2001:db8::/128")->prefix, 128);
}

TEST(IpNetworkTest, RefusesHostBitsNamingTheNetworkMeant) {
  auto n = IpNetwork::parse("10.1.0.0/8");
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().kind, ErrorKind::kInvalidInput);
  EXPECT_EQ(n.error().message, "network '10.1.0.0/8': host bits are set; did you mean 10.0.0.0/8?");
  auto m = IpNetwork::parse("fd00::1/8");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("did you mean fd00::/8?"), std::string::npos);
  EXPECT_NE(IpNetwork::parse("192.168.1.1/31").error().message.find("192.168.1.0/31"),
            std::string::npos);
}

TEST(IpNetworkTest, RefusesBadPrefixes) {
  for (const char* text : {"10.0.0.0/33", "10.0.0.0/", "10.0.0.0/08", "10.0.0.0/-1", "10.0.0.0/+8",
                           "10.0.0.0/8/8", "::/129", "::/1280", "10.0.0.0/ 8", "pypi.org/8", "/8",
                           "", "010.0.0.0/8", "[10.0.0.0]/8"}) {
    auto n = IpNetwork::parse(text);
    EXPECT_FALSE(n) << text;
    if (!n) {
      EXPECT_EQ(n.error().kind, ErrorKind::kInvalidInput) << text;
    }
  }
}

TEST(IpNetworkTest, ContainsAtThePrefixBoundaries) {
  auto n = IpNetwork::parse("172.16.0.0/12").value();
  EXPECT_TRUE(n.contains(IpAddress::v4(172, 16, 0, 0)));
  EXPECT_TRUE(n.contains(IpAddress::v4(172, 31, 255, 255)));
  EXPECT_FALSE(n.contains(IpAddress::v4(172, 32, 0, 0)));
  EXPECT_FALSE(n.contains(IpAddress::v4(172, 15, 255, 255)));
  auto all = IpNetwork::parse("0.0.0.0/0").value();
  EXPECT_TRUE(all.contains(IpAddress::v4(255, 255, 255, 255)));
  EXPECT_FALSE(all.contains(v6("2001:db8::1")));
  auto one = IpNetwork::parse("203.0.113.7").value();
  EXPECT_TRUE(one.contains(IpAddress::v4(203, 0, 113, 7)));
  EXPECT_FALSE(one.contains(IpAddress::v4(203, 0, 113, 6)));
  auto v6net = IpNetwork::parse("2001:db8::/33").value();
  EXPECT_TRUE(v6net.contains(v6("2001:db8:7fff:ffff:ffff:ffff:ffff:ffff")));
  EXPECT_FALSE(v6net.contains(v6("2001:db8:8000::")));
  EXPECT_FALSE(v6net.contains(IpAddress::v4(32, 1, 13, 184)));
}

TEST(IpNetworkTest, Ipv4NetworksContainTheMappedForm) {
  auto n = IpNetwork::parse("10.0.0.0/8").value();
  EXPECT_TRUE(n.contains(v6("::ffff:10.1.2.3")));
  EXPECT_FALSE(n.contains(v6("::ffff:11.1.2.3")));
  EXPECT_FALSE(n.contains(v6("::10.1.2.3")));  // IPv4-compatible is not the same socket address
  auto mapped = IpNetwork::parse("::ffff:10.0.0.0/104").value();
  EXPECT_TRUE(mapped.contains(IpAddress::v4(10, 9, 9, 9)));
  EXPECT_FALSE(mapped.contains(IpAddress::v4(11, 9, 9, 9)));
}

}  // namespace
}  // namespace carapace::egress
