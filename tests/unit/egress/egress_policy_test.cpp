// The two stages of the egress policy: names and literals against the rules (deny wins, ports,
// wildcard depth, literals only through network rules) and every resolved address against the
// SSRF classes (always-denied classes, private only through a network allow rule, host-own
// addresses, network deny rules whatever the class). Also the policy's own limits and errors.
#include "egress/policy/egress_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace carapace::egress {
namespace {

EgressPolicy policy(const std::vector<std::string>& allow, const std::vector<std::string>& deny) {
  auto p = EgressPolicy::parse(allow, deny);
  EXPECT_TRUE(p) << p.error().message;
  return p ? p.value() : EgressPolicy{};
}

Destination dest(std::string_view host, uint16_t port) {
  auto d = parse_destination(host, port);
  EXPECT_TRUE(d) << host << ": " << d.error().message;
  return d ? d.value() : Destination{};
}

IpAddress ip(const char* text) {
  return IpAddress::parse(text).value();
}

TEST(DestinationTest, NamesAndLiterals) {
  Destination d = dest("PyPI.org.", 443);
  EXPECT_EQ(d.host, "pypi.org");
  EXPECT_EQ(d.port, 443);
  EXPECT_FALSE(d.literal);
  d = dest("203.0.113.7", 80);
  EXPECT_EQ(d.host, "203.0.113.7");
  EXPECT_EQ(d.literal, IpAddress::v4(203, 0, 113, 7));
  d = dest("[2001:DB8::1]", 443);
  EXPECT_EQ(d.host, "2001:db8::1");
  EXPECT_EQ(d.literal, ip("2001:db8::1"));
  d = dest("2001:db8::1", 443);
  EXPECT_EQ(d.host, "2001:db8::1");
  EXPECT_TRUE(d.literal);
  EXPECT_EQ(dest("Bücher.example", 443).host, "xn--bcher-kva.example");
}

TEST(DestinationTest, Refusals) {
  auto zero = parse_destination("pypi.org", 0);
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(zero.error().message.find("port 0"), std::string::npos);
  for (const char* host : {"127.1", "0x7f.0.0.1", "0x7f000001", "2130706433", "010.0.0.1",
                           "[127.0.0.1]", "fe80::1%eth0", "", "a b", "xn--zz"}) {
    auto d = parse_destination(host, 80);
    EXPECT_FALSE(d) << host;
    if (!d) {
      EXPECT_EQ(d.error().kind, ErrorKind::kInvalidInput) << host;
    }
  }
}

TEST(EgressPolicyTest, ParseKeepsTheTextsAndNamesTheBadEntry) {
  EgressPolicy p = policy({"PyPI.org:443", "*.pythonhosted.org"}, {"evil.pypi.org"});
  EXPECT_EQ(p.allow_texts(), (std::vector<std::string>{"PyPI.org:443", "*.pythonhosted.org"}));
  EXPECT_EQ(p.deny_texts(), (std::vector<std::string>{"evil.pypi.org"}));
  auto bad = EgressPolicy::parse({"a.example", "b.example", "c.example", "d..example"}, {});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::kInvalidInput);
  EXPECT_EQ(bad.error().message.rfind("allow_hosts[3]: host rule 'd..example'", 0), 0u)
      << bad.error().message;
  bad = EgressPolicy::parse({"a.example"}, {"10.1.0.0/8"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("deny_hosts[0]: host rule '10.1.0.0/8'", 0), 0u)
      << bad.error().message;
  EXPECT_TRUE(EgressPolicy::parse({}, {}));
}

TEST(EgressPolicyTest, AtMostMaxRulesPerList) {
  std::vector<std::string> rules;
  for (size_t i = 0; i < kMaxPolicyRules; ++i)
    rules.push_back("h" + std::to_string(i) + ".example");
  EXPECT_TRUE(EgressPolicy::parse(rules, rules));
  rules.push_back("one-more.example");
  auto a = EgressPolicy::parse(rules, {});
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().kind, ErrorKind::kInvalidInput);
  EXPECT_EQ(a.error().message, "allow_hosts has 257 rules; at most 256 are allowed");
  auto d = EgressPolicy::parse({}, rules);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().message, "deny_hosts has 257 rules; at most 256 are allowed");
}

TEST(EgressPolicyTest, TransparentPortsAre80And443ThenTheNamedRulesPorts) {
  auto p = EgressPolicy::parse(
      {"a.test:8080", "*.b.test:443", "c.test", "10.0.0.0/8:5432", "*:9000", "d.test:8080"},
      {"e.test:7000"});
  ASSERT_TRUE(p.ok()) << p.error().describe();
  // Network rules are for literals and addresses, never captured; deny rules open nothing.
  EXPECT_EQ(transparent_ports(*p), (std::vector<uint16_t>{80, 443, 8080, 9000}));
  std::vector<std::string> many;
  for (int i = 0; i < 40; ++i)
    many.push_back("h" + std::to_string(i) + ".test:" + std::to_string(10000 + i));
  auto big = EgressPolicy::parse(many, {});
  ASSERT_TRUE(big.ok());
  auto ports = transparent_ports(*big);
  ASSERT_EQ(ports.size(), kMaxTransparentPorts);
  EXPECT_EQ(ports[2], 10000);
  EXPECT_EQ(ports.back(), 10000 + kMaxTransparentPorts - 3);
}

TEST(DecideTest, NameRules) {
  EgressPolicy p = policy({"pypi.org:443", "*.pythonhosted.org", "files.example"}, {});
  Decision d = decide(p, dest("pypi.org", 443));
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.reason, "allowed by 'pypi.org:443'");
  EXPECT_EQ(d.rule, "pypi.org:443");
  EXPECT_FALSE(decide(p, dest("pypi.org", 80)).allowed);  // the rule's port only
  EXPECT_FALSE(decide(p, dest("www.pypi.org", 443)).allowed);
  EXPECT_TRUE(decide(p, dest("files.example", 1)).allowed);  // no port: any port
  EXPECT_TRUE(decide(p, dest("files.example", 65535)).allowed);
  EXPECT_FALSE(decide(p, dest("xfiles.example", 443)).allowed);
  d = decide(p, dest("other.example", 443));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.reason, "no allow rule matches");
  EXPECT_EQ(d.rule, "");
}

TEST(DecideTest, WildcardsMatchStrictlyBelowAtAnyDepth) {
  EgressPolicy p = policy({"*.pythonhosted.org"}, {});
  EXPECT_TRUE(decide(p, dest("files.pythonhosted.org", 443)).allowed);
  EXPECT_TRUE(decide(p, dest("a.b.c.pythonhosted.org", 443)).allowed);
  EXPECT_TRUE(decide(p, dest("FILES.PythonHosted.org.", 443)).allowed);
  EXPECT_FALSE(decide(p, dest("pythonhosted.org", 443)).allowed);  // not the apex
  EXPECT_FALSE(decide(p, dest("xpythonhosted.org", 443)).allowed);
  EXPECT_FALSE(decide(p, dest("pythonhosted.org.evil.example", 443)).allowed);
  EXPECT_FALSE(decide(p, dest("ythonhosted.org", 443)).allowed);
  EgressPolicy port = policy({"*.pythonhosted.org:443"}, {});
  EXPECT_TRUE(decide(port, dest("files.pythonhosted.org", 443)).allowed);
  EXPECT_FALSE(decide(port, dest("files.pythonhosted.org", 80)).allowed);
}

TEST(DecideTest, DenyWins) {
  EgressPolicy p = policy({"*.pypi.org", "*"}, {"evil.pypi.org", "*.bad.example:443"});
  Decision d = decide(p, dest("evil.pypi.org", 443));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.reason, "denied by 'evil.pypi.org'");
  EXPECT_EQ(d.rule, "evil.pypi.org");
  EXPECT_TRUE(decide(p, dest("good.pypi.org", 443)).allowed);
  d = decide(p, dest("x.bad.example", 443));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rule, "*.bad.example:443");
  d = decide(p, dest("x.bad.example", 80));  // the deny rule's port only
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.rule, "*");
  EgressPolicy all_denied = policy({"pypi.org"}, {"*"});
  EXPECT_EQ(decide(all_denied, dest("pypi.org", 443)).reason, "denied by '*'");
}

TEST(DecideTest, AnyNameNeverMatchesALiteral) {
  EgressPolicy p = policy({"*", "*:443"}, {});
  EXPECT_TRUE(decide(p, dest("anything.example", 8080)).allowed);
  Decision d = decide(p, dest("203.0.113.7", 443));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.reason, "IP address literal with no network rule");
  EXPECT_FALSE(decide(p, dest("[2001:db8::1]", 443)).allowed);
}

TEST(DecideTest, LiteralsOnlyThroughNetworkRules) {
  EgressPolicy p = policy({"203.0.113.0/24:443", "[2001:db8::]/32", "10.0.0.0/8:5432"}, {});
  Decision d = decide(p, dest("203.0.113.7", 443));
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.reason, "allowed by '203.0.113.0/24:443'");
  EXPECT_FALSE(decide(p, dest("203.0.113.7", 80)).allowed);
  EXPECT_FALSE(decide(p, dest("203.0.114.7", 443)).allowed);
  EXPECT_EQ(decide(p, dest("203.0.114.7", 443)).reason, "no allow rule matches");
  EXPECT_TRUE(decide(p, dest("2001:db8:1::1", 22)).allowed);
  EXPECT_TRUE(decide(p, dest("::ffff:203.0.113.9", 443)).allowed);  // the mapped form
  EXPECT_TRUE(decide(p, dest("10.1.2.3", 5432)).allowed);
  // Network rules never match names, even names that resolve into them.
  EXPECT_FALSE(decide(p, dest("db.internal", 5432)).allowed);
  // Name rules never match literals.
  EgressPolicy names = policy({"pypi.org"}, {});
  EXPECT_EQ(decide(names, dest("151.101.0.223", 443)).reason,
            "IP address literal with no network rule");
}

TEST(DecideTest, NetworkDenyRulesCatchLiteralsAndTheirWrappedForms) {
  EgressPolicy p = policy({"0.0.0.0/0", "::/0"}, {"203.0.113.0/24", "[2001:db8:bad::]/48:443"});
  Decision d = decide(p, dest("203.0.113.7", 443));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.reason, "denied by '203.0.113.0/24'");
  EXPECT_FALSE(decide(p, dest("::ffff:203.0.113.7", 443)).allowed);
  EXPECT_FALSE(decide(p, dest("64:ff9b::cb00:7107", 443)).allowed);  // NAT64
  EXPECT_FALSE(decide(p, dest("2002:cb00:7107::", 443)).allowed);    // 6to4
  EXPECT_FALSE(decide(p, dest("2001:db8:bad::1", 443)).allowed);
  EXPECT_TRUE(decide(p, dest("2001:db8:bad::1", 80)).allowed);
  EXPECT_TRUE(decide(p, dest("198.51.100.1", 443)).allowed);
  // A name deny rule does not match a literal; a name with a deny network rule is left to the
  // address stage.
  EgressPolicy names = policy({"0.0.0.0/0", "*"}, {"*", "10.0.0.0/8"});
  EXPECT_TRUE(decide(names, dest("198.51.100.1", 443)).allowed);
  EXPECT_FALSE(decide(names, dest("a.example", 443)).allowed);
}

TEST(CheckAddressTest, PublicAddressesAreAllowed) {
  EgressPolicy p = policy({"pypi.org"}, {});
  Decision d = check_address(p, dest("pypi.org", 443), ip("203.0.113.7"), {});
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.reason, "resolves to public address 203.0.113.7");
  EXPECT_EQ(d.rule, "");
  EXPECT_TRUE(check_address(p, dest("pypi.org", 443), ip("2001:db8::7"), {}).allowed);
}

TEST(CheckAddressTest, AlwaysDeniedClassesEvenWithANetworkAllowRule) {
  EgressPolicy p = policy({"*", "0.0.0.0/0", "::/0", "127.0.0.0/8", "169.254.0.0/16"}, {});
  const Destination name = dest("pypi.org", 443);
  struct Case {
    const char* address;
    const char* reason;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"127.0.0.1", "resolves to loopback address 127.0.0.1"},
           {"::1", "resolves to loopback address ::1"},
           {"::ffff:127.0.0.1", "resolves to loopback address ::ffff:127.0.0.1"},
           {"::127.0.0.1", "resolves to loopback address ::127.0.0.1"},
           {"64:ff9b::7f00:1", "resolves to loopback address 64:ff9b::7f00:1"},
           {"2002:7f00:1::", "resolves to loopback address 2002:7f00:1::"},
           {"169.254.169.254", "resolves to link-local address 169.254.169.254"},
           {"::ffff:169.254.169.254", "resolves to link-local address ::ffff:169.254.169.254"},
           {"fe80::1", "resolves to link-local address fe80::1"},
           {"0.0.0.0", "resolves to unspecified address 0.0.0.0"},
           {"::", "resolves to unspecified address ::"},
           {"224.0.0.1", "resolves to multicast address 224.0.0.1"},
           {"ff02::1", "resolves to multicast address ff02::1"},
           {"255.255.255.255", "resolves to broadcast address 255.255.255.255"},
           {"240.0.0.1", "resolves to reserved address 240.0.0.1"},
           {"192.0.0.8", "resolves to reserved address 192.0.0.8"},
           {"100::1", "resolves to reserved address 100::1"},
       }) {
    Decision d = check_address(p, name, ip(c.address), {});
    EXPECT_FALSE(d.allowed) << c.address;
    EXPECT_EQ(d.reason, c.reason);
    EXPECT_EQ(d.rule, "") << c.address;
  }
  // A literal is described as itself, not as something a name resolved to.
  Decision d = check_address(p, dest("127.0.0.1", 80), ip("127.0.0.1"), {});
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.reason, "loopback address 127.0.0.1");
}

TEST(CheckAddressTest, PrivateOnlyThroughAPortMatchingNetworkAllowRule) {
  const Destination mirror = dest("mirror.internal", 443);
  EgressPolicy none = policy({"mirror.internal"}, {});
  Decision d = check_address(none, mirror, ip("10.1.2.3"), {});
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.reason, "resolves to private address 10.1.2.3 (no network allow rule contains it)");
  EXPECT_FALSE(check_address(none, mirror, ip("100.64.0.1"), {}).allowed);  // cgnat
  EXPECT_FALSE(check_address(none, mirror, ip("fd00::1"), {}).allowed);
  EXPECT_FALSE(check_address(none, mirror, ip("198.18.0.1"), {}).allowed);

  EgressPolicy p = policy({"mirror.internal", "10.1.0.0/16:443", "100.64.0.0/10", "fd00::/8"}, {});
  d = check_address(p, mirror, ip("10.1.2.3"), {});
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.reason, "allowed by '10.1.0.0/16:443'");
  EXPECT_EQ(d.rule, "10.1.0.0/16:443");
  EXPECT_TRUE(check_address(p, mirror, ip("::ffff:10.1.2.3"), {}).allowed);
  EXPECT_FALSE(check_address(p, dest("mirror.internal", 80), ip("10.1.2.3"), {}).allowed);
  EXPECT_FALSE(check_address(p, mirror, ip("10.2.0.1"), {}).allowed);
  EXPECT_TRUE(check_address(p, mirror, ip("100.64.0.1"), {}).allowed);
  EXPECT_TRUE(check_address(p, mirror, ip("fd00::1"), {}).allowed);
  // A name rule never admits a private address.
  EgressPolicy star = policy({"*"}, {});
  EXPECT_FALSE(check_address(star, mirror, ip("192.168.1.1"), {}).allowed);
}

TEST(CheckAddressTest, HostOwnAddressesAreAlwaysDenied) {
  const std::vector<IpAddress> host = {ip("203.0.113.5"), ip("2001:db8::5")};
  EgressPolicy p = policy({"*", "203.0.113.0/24", "2001:db8::/32"}, {});
  Decision d = check_address(p, dest("me.example", 443), ip("203.0.113.5"), host);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.reason, "resolves to host's own address 203.0.113.5");
  EXPECT_FALSE(check_address(p, dest("me.example", 443), ip("::ffff:203.0.113.5"), host).allowed);
  EXPECT_FALSE(check_address(p, dest("me.example", 443), ip("2001:db8::5"), host).allowed);
  EXPECT_TRUE(check_address(p, dest("me.example", 443), ip("203.0.113.6"), host).allowed);
}

TEST(CheckAddressTest, NetworkDenyRulesDenyWhateverTheClass) {
  EgressPolicy p = policy({"*", "10.0.0.0/8"}, {"10.9.0.0/16", "198.51.100.0/24:443"});
  const Destination name = dest("a.example", 443);
  Decision d = check_address(p, name, ip("10.9.1.1"), {});
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.reason, "denied by '10.9.0.0/16'");
  EXPECT_EQ(d.rule, "10.9.0.0/16");
  EXPECT_TRUE(check_address(p, name, ip("10.8.1.1"), {}).allowed);
  d = check_address(p, name, ip("198.51.100.7"), {});
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rule, "198.51.100.0/24:443");
  EXPECT_FALSE(check_address(p, name, ip("64:ff9b::c633:6407"), {}).allowed);
  EXPECT_TRUE(check_address(p, dest("a.example", 80), ip("198.51.100.7"), {}).allowed);
  // Name deny rules play no part at this stage: the name stage already applied them.
  EgressPolicy names = policy({"*"}, {"a.example"});
  EXPECT_TRUE(check_address(names, name, ip("198.51.100.7"), {}).allowed);
}

}  // namespace
}  // namespace carapace::egress
