// The SSRF classifier: the first and last address of every range and one on each side, the
// metadata service, every wrapped IPv6 form of an IPv4 address (mapped, compatible, NAT64, 6to4),
// and the host's own addresses.
#include "egress/policy/address_class.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace carapace::egress {
namespace {

AddressClass cls(const char* text) {
  auto a = IpAddress::parse(text);
  EXPECT_TRUE(a.has_value()) << text;
  return a ? classify_address(*a) : AddressClass::kPublic;
}

std::string cls_name(const char* text) {
  return address_class_name(cls(text));
}

struct Case {
  const char* address;
  const char* expected;
};

void expect_all(std::initializer_list<Case> cases) {
  for (const Case& c : cases)
    EXPECT_EQ(cls_name(c.address), c.expected) << c.address;
}

TEST(AddressClassTest, Names) {
  EXPECT_STREQ(address_class_name(AddressClass::kPublic), "public");
  EXPECT_STREQ(address_class_name(AddressClass::kUnspecified), "unspecified");
  EXPECT_STREQ(address_class_name(AddressClass::kLoopback), "loopback");
  EXPECT_STREQ(address_class_name(AddressClass::kPrivate), "private");
  EXPECT_STREQ(address_class_name(AddressClass::kLinkLocal), "link-local");
  EXPECT_STREQ(address_class_name(AddressClass::kCgnat), "cgnat");
  EXPECT_STREQ(address_class_name(AddressClass::kMulticast), "multicast");
  EXPECT_STREQ(address_class_name(AddressClass::kBroadcast), "broadcast");
  EXPECT_STREQ(address_class_name(AddressClass::kReserved), "reserved");
  EXPECT_STREQ(address_class_name(AddressClass::kHostOwn), "host's own address");
}

TEST(AddressClassTest, Ipv4RangeBoundaries) {
  expect_all({
      {"0.0.0.0", "unspecified"},
      {"0.0.0.1", "reserved"},
      {"0.255.255.255", "reserved"},
      {"1.0.0.0", "public"},
      {"9.255.255.255", "public"},
      {"10.0.0.0", "private"},
      {"10.255.255.255", "private"},
      {"11.0.0.0", "public"},
      {"100.63.255.255", "public"},
      {"100.64.0.0", "cgnat"},
      {"100.127.255.255", "cgnat"},
      {"100.128.0.0", "public"},
      {"126.255.255.255", "public"},
      {"127.0.0.0", "loopback"},
      {"127.0.0.1", "loopback"},
      {"127.255.255.255", "loopback"},
      {"128.0.0.0", "public"},
      {"169.253.255.255", "public"},
      {"169.254.0.0", "link-local"},
      {"169.254.169.254", "link-local"},
      {"169.254.255.255", "link-local"},
      {"169.255.0.0", "public"},
      {"172.15.255.255", "public"},
      {"172.16.0.0", "private"},
      {"172.31.255.255", "private"},
      {"172.32.0.0", "public"},
      {"191.255.255.255", "public"},
      {"192.0.0.0", "reserved"},
      {"192.0.0.255", "reserved"},
      {"192.0.1.0", "public"},
      {"192.0.2.0", "public"},  // TEST-NET-1
      {"192.0.2.255", "public"},
      {"192.167.255.255", "public"},
      {"192.168.0.0", "private"},
      {"192.168.255.255", "private"},
      {"192.169.0.0", "public"},
      {"198.17.255.255", "public"},
      {"198.18.0.0", "private"},
      {"198.19.255.255", "private"},
      {"198.20.0.0", "public"},
      {"198.51.100.1", "public"},  // TEST-NET-2
      {"203.0.113.7", "public"},   // TEST-NET-3
      {"223.255.255.255", "public"},
      {"224.0.0.0", "multicast"},
      {"239.255.255.255", "multicast"},
      {"240.0.0.0", "reserved"},
      {"255.255.255.254", "reserved"},
      {"255.255.255.255", "broadcast"},
      {"8.8.8.8", "public"},
  });
}

TEST(AddressClassTest, Ipv6RangeBoundaries) {
  expect_all({
      {"::", "unspecified"},
      {"[::1]", "loopback"},
      {"::1", "loopback"},
      {"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "public"},
      {"fe80::", "link-local"},
      {"fe80::1", "link-local"},
      {"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local"},
      {"fec0::", "private"},
      {"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "private"},
      {"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "public"},
      {"fc00::", "private"},
      {"fd00::1", "private"},
      {"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "private"},
      {"ff00::", "multicast"},
      {"ff02::1", "multicast"},
      {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast"},
      {"ff::", "public"},
      {"100::", "reserved"},
      {"100::ffff:ffff:ffff:ffff", "reserved"},
      {"100:0:0:1::", "public"},
      {"ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "public"},
      {"2001:db8::1", "public"},
      {"2606:4700::1111", "public"},
  });
}

TEST(AddressClassTest, WrappedIpv4IsClassifiedAsTheIpv4) {
  expect_all({
      {"::ffff:127.0.0.1", "loopback"},
      {"::ffff:7f00:1", "loopback"},
      {"::ffff:169.254.169.254", "link-local"},
      {"::ffff:10.0.0.1", "private"},
      {"::ffff:0.0.0.0", "unspecified"},
      {"::ffff:203.0.113.7", "public"},
      {"::127.0.0.1", "loopback"},  // IPv4-compatible
      {"::169.254.169.254", "link-local"},
      {"::0.0.0.2", "reserved"},
      {"::8.8.8.8", "public"},
      {"64:ff9b::7f00:1", "loopback"},  // NAT64
      {"64:ff9b::169.254.169.254", "link-local"},
      {"64:ff9b::a00:1", "private"},
      {"64:ff9b::808:808", "public"},
      {"64:ff9b:0:0:1::7f00:1", "public"},  // outside 64:ff9b::/96
      {"2002:7f00:1::", "loopback"},        // 6to4
      {"2002:a9fe:a9fe::1", "link-local"},
      {"2002:c000:0201::", "public"},
      {"2003:7f00:1::", "public"},
  });
}

TEST(AddressClassTest, EmbeddedV4) {
  auto e = [](const char* text) { return embedded_v4(IpAddress::parse(text).value()); };
  EXPECT_EQ(e("::ffff:1.2.3.4"), IpAddress::v4(1, 2, 3, 4));
  EXPECT_EQ(e("::1.2.3.4"), IpAddress::v4(1, 2, 3, 4));
  EXPECT_EQ(e("64:ff9b::1.2.3.4"), IpAddress::v4(1, 2, 3, 4));
  EXPECT_EQ(e("2002:102:304:5::6"), IpAddress::v4(1, 2, 3, 4));
  EXPECT_FALSE(e("::"));
  EXPECT_FALSE(e("::1"));
  EXPECT_FALSE(e("1.2.3.4"));
  EXPECT_FALSE(e("2001:db8::1.2.3.4"));
}

TEST(AddressClassTest, HostOwnAddressesWinOverEveryClassARuleCouldAdmit) {
  const std::vector<IpAddress> host = {IpAddress::v4(203, 0, 113, 5), IpAddress::v4(127, 0, 0, 1),
                                       IpAddress::parse("2001:db8::5").value(),
                                       IpAddress::parse("::ffff:198.51.100.9").value(),
                                       IpAddress::v4(10, 0, 0, 5)};
  auto c = [&host](const char* text) {
    return classify_address(IpAddress::parse(text).value(), host);
  };
  EXPECT_EQ(c("203.0.113.5"), AddressClass::kHostOwn);
  EXPECT_EQ(c("::ffff:203.0.113.5"), AddressClass::kHostOwn);
  EXPECT_EQ(c("64:ff9b::cb00:7105"), AddressClass::kHostOwn);
  EXPECT_EQ(c("2002:cb00:7105::"), AddressClass::kHostOwn);
  EXPECT_EQ(c("2001:db8::5"), AddressClass::kHostOwn);
  EXPECT_EQ(c("198.51.100.9"), AddressClass::kHostOwn);  // the host listed its mapped form
  EXPECT_EQ(c("203.0.113.6"), AddressClass::kPublic);
  EXPECT_EQ(c("2001:db8::6"), AddressClass::kPublic);
  EXPECT_EQ(c("127.0.0.1"), AddressClass::kLoopback);  // its own class first
  // A private (or CGNAT) address of the host is the host's own: a 10.0.0.0/8 allow rule must not
  // open it.
  EXPECT_EQ(c("10.0.0.5"), AddressClass::kHostOwn);
  EXPECT_EQ(c("10.0.0.6"), AddressClass::kPrivate);
  EXPECT_EQ(classify_address(IpAddress::v4(203, 0, 113, 5), {}), AddressClass::kPublic);
}

TEST(AddressClassTest, HostInterfaceAddressesAreListedOnce) {
  auto addrs = host_interface_addresses();
  ASSERT_TRUE(addrs) << addrs.error().describe();
  for (size_t i = 0; i < addrs->size(); ++i) {
    for (size_t j = i + 1; j < addrs->size(); ++j)
      EXPECT_FALSE((*addrs)[i] == (*addrs)[j]) << (*addrs)[i].to_string() << " listed twice";
  }
}

}  // namespace
}  // namespace carapace::egress
