// parse_host_rule: every form of the syntax with and without a port, the normalisation of names,
// where '*' may stand, the port's spelling, and one-line errors naming the rule.
#include "egress/policy/host_rule.h"

#include <gtest/gtest.h>

#include <string>

namespace carapace::egress {
namespace {

using Kind = HostRule::Kind;

HostRule rule(std::string_view text) {
  auto r = parse_host_rule(text);
  EXPECT_TRUE(r) << text << ": " << r.error().message;
  return r ? r.value() : HostRule{};
}

std::string error_of(std::string_view text) {
  auto r = parse_host_rule(text);
  EXPECT_FALSE(r) << text << " was accepted";
  if (r) return "";
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput) << text;
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << text;
  return r.error().message;
}

void expect_error(std::string_view text, std::string_view why) {
  const std::string message = error_of(text);
  EXPECT_NE(message.find(why), std::string::npos) << text << ": " << message;
}

TEST(HostRuleTest, Names) {
  HostRule r = rule("pypi.org");
  EXPECT_EQ(r.kind, Kind::kName);
  EXPECT_EQ(r.name, "pypi.org");
  EXPECT_FALSE(r.port);
  EXPECT_EQ(r.text, "pypi.org");
  r = rule("PyPI.org.:443");
  EXPECT_EQ(r.kind, Kind::kName);
  EXPECT_EQ(r.name, "pypi.org");
  EXPECT_EQ(r.port, 443);
  EXPECT_EQ(r.text, "PyPI.org.:443");
  EXPECT_EQ(rule("Bücher.example:8080").name, "xn--bcher-kva.example");
  EXPECT_EQ(rule("localhost").name, "localhost");
}

TEST(HostRuleTest, Wildcards) {
  HostRule r = rule("*.pypi.org");
  EXPECT_EQ(r.kind, Kind::kWildcard);
  EXPECT_EQ(r.name, "pypi.org");
  EXPECT_FALSE(r.port);
  r = rule("*.PyPI.org.:443");
  EXPECT_EQ(r.kind, Kind::kWildcard);
  EXPECT_EQ(r.name, "pypi.org");
  EXPECT_EQ(r.port, 443);
  r = rule("*");
  EXPECT_EQ(r.kind, Kind::kAnyName);
  EXPECT_FALSE(r.port);
  r = rule("*:443");
  EXPECT_EQ(r.kind, Kind::kAnyName);
  EXPECT_EQ(r.port, 443);
  EXPECT_EQ(rule("*.com").name, "com");
  for (const char* bad : {"foo*.x", "*x.y", "a.*.b", "*.*.x", "**", "*.x*", "x.*", "*a"})
    expect_error(bad, "'*' may only be the whole first label");
  expect_error("*.", "is empty");
  expect_error("*.1.2.3.4", "is an IP address literal");
  expect_error("*.127.1", "ends in a number");
}

TEST(HostRuleTest, Networks) {
  HostRule r = rule("10.0.0.0/8");
  EXPECT_EQ(r.kind, Kind::kNetwork);
  EXPECT_EQ(r.network.to_string(), "10.0.0.0/8");
  EXPECT_FALSE(r.port);
  r = rule("10.0.0.0/8:5432");
  EXPECT_EQ(r.network.to_string(), "10.0.0.0/8");
  EXPECT_EQ(r.port, 5432);
  r = rule("203.0.113.7");
  EXPECT_EQ(r.kind, Kind::kNetwork);
  EXPECT_EQ(r.network.to_string(), "203.0.113.7/32");
  r = rule("203.0.113.7:80");
  EXPECT_EQ(r.network.to_string(), "203.0.113.7/32");
  EXPECT_EQ(r.port, 80);
  r = rule("[2001:db8::1]");
  EXPECT_EQ(r.network.to_string(), "2001:db8::1/128");
  EXPECT_FALSE(r.port);
  r = rule("[2001:db8::1]:443");
  EXPECT_EQ(r.network.to_string(), "2001:db8::1/128");
  EXPECT_EQ(r.port, 443);
  r = rule("[2001:db8::]/32:443");
  EXPECT_EQ(r.network.to_string(), "2001:db8::/32");
  EXPECT_EQ(r.port, 443);
  r = rule("[2001:db8::]/32");
  EXPECT_EQ(r.network.to_string(), "2001:db8::/32");
  EXPECT_FALSE(r.port);
  // Unbracketed IPv6 has no port: the last group is part of the address.
  r = rule("2001:db8::1");
  EXPECT_EQ(r.kind, Kind::kNetwork);
  EXPECT_EQ(r.network.to_string(), "2001:db8::1/128");
  EXPECT_FALSE(r.port);
  r = rule("2001:db8::1:443");
  EXPECT_EQ(r.network.to_string(), "2001:db8::1:443/128");
  EXPECT_FALSE(r.port);
  EXPECT_EQ(rule("fd00::/8").network.to_string(), "fd00::/8");
  EXPECT_EQ(rule("::ffff:10.0.0.0/104").network.to_string(), "::ffff:10.0.0.0/104");
  expect_error("10.1.0.0/8", "did you mean 10.0.0.0/8?");
  expect_error("10.1.0.0/8:443", "did you mean 10.0.0.0/8?");
  expect_error("10.0.0.0/33", "prefix length");
  expect_error("[2001:db8::1", "without a closing ']'");
  expect_error("[2001:db8::1]443", "network");
  expect_error("[203.0.113.7]:80", "not an IPv4 or IPv6 address");
  expect_error("[fe80::1%eth0]:80", "not an IPv4 or IPv6 address");
  expect_error("pypi.org/8", "not an IPv4 or IPv6 address");
}

TEST(HostRuleTest, NumericFormsAreNeitherAddressesNorNames) {
  for (const char* bad :
       {"127.1", "0x7f.1", "0x7f000001", "2130706433", "010.0.0.1:80", "0177.0.0.1", "1.2.3.4444"})
    expect_error(bad, "ends in a number");
}

TEST(HostRuleTest, Ports) {
  EXPECT_EQ(rule("a.example:1").port, 1);
  EXPECT_EQ(rule("a.example:65535").port, 65535);
  for (const char* bad : {"a.example:0", "a.example:65536", "a.example:080", "a.example:+80",
                          "a.example:-1", "a.example:", "a.example:http", "a.example:8 0",
                          "a.example:99999999999", "*:0", "10.0.0.0/8:00", "[::1]:", "[::1]:65536"})
    expect_error(bad, "the port is not a number from 1 to 65535");
  expect_error("a.example:80:80", "network");  // two colons and no brackets: read as IPv6
}

TEST(HostRuleTest, ErrorsNameTheRule) {
  EXPECT_EQ(error_of(""), "host rule '': is empty");
  EXPECT_EQ(error_of("a b.example"),
            "host rule 'a b.example': host name 'a b.example' has a character other than a-z, "
            "0-9, '-' and '_'");
  EXPECT_EQ(error_of("x.example:0"),
            "host rule 'x.example:0': the port is not a number from 1 to 65535");
  expect_error("xn--zz:443", "host rule 'xn--zz:443': host name 'xn--zz'");
  expect_error("evil\n.example", "'evil\\x0a.example'");
}

}  // namespace
}  // namespace carapace::egress
