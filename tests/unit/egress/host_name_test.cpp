// normalize_host_name: case, the trailing dot, IDNA (UTS #46 mapping to A-labels, invalid
// punycode), the RFC 1035 lengths at their limits, and every spelling a resolver reads as an
// IPv4 address refused.
#include "egress/policy/host_name.h"

#include <gtest/gtest.h>

#include <string>

namespace carapace::egress {
namespace {

std::string norm(std::string_view name) {
  auto r = normalize_host_name(name);
  EXPECT_TRUE(r) << name << ": " << r.error().message;
  return r ? r.value() : std::string();
}

std::string error_of(std::string_view name) {
  auto r = normalize_host_name(name);
  EXPECT_FALSE(r) << name << " was accepted as " << (r ? r.value() : "");
  if (r) return "";
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput) << name;
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << name;
  return r.error().message;
}

void expect_error(std::string_view name, std::string_view why) {
  const std::string message = error_of(name);
  EXPECT_NE(message.find(why), std::string::npos) << name << ": " << message;
}

TEST(HostNameTest, LowerCaseAndOneTrailingDot) {
  EXPECT_EQ(norm("pypi.org"), "pypi.org");
  EXPECT_EQ(norm("PyPI.ORG"), "pypi.org");
  EXPECT_EQ(norm("PyPI.org."), "pypi.org");
  EXPECT_EQ(norm("localhost"), "localhost");
  EXPECT_EQ(norm("_dmarc.example.com"), "_dmarc.example.com");
  EXPECT_EQ(norm("a-b.c-d.example"), "a-b.c-d.example");
  EXPECT_EQ(norm("r3---sn-abc.googlevideo.com"), "r3---sn-abc.googlevideo.com");
  EXPECT_EQ(norm("1.2.3.x"), "1.2.3.x");
  EXPECT_EQ(norm("123.example"), "123.example");
  EXPECT_EQ(norm("0x7f.example"), "0x7f.example");
  expect_error("pypi.org..", "has an empty label");
  expect_error(".", "has no label");
  expect_error("", "is empty");
  expect_error("a..b", "has an empty label");
  expect_error(".pypi.org", "has an empty label");
}

TEST(HostNameTest, Idna) {
  EXPECT_EQ(norm("Bücher.example"), "xn--bcher-kva.example");
  EXPECT_EQ(norm("BÜCHER.example."), "xn--bcher-kva.example");
  EXPECT_EQ(norm("xn--bcher-kva.example"), "xn--bcher-kva.example");
  EXPECT_EQ(norm("XN--BCHER-KVA.EXAMPLE"), "xn--bcher-kva.example");
  EXPECT_EQ(norm("faß.de"), "xn--fa-hia.de");  // non-transitional: ß is kept, not "ss"
  EXPECT_EQ(norm("ＥＸＡＭＰＬＥ.com"), "example.com");
  EXPECT_EQ(norm("example\xe3\x80\x82"
                 "com"),
            "example.com");  // U+3002 ideographic full stop
  expect_error("xn--zz", "is not a valid IDNA name");
  expect_error("xn--zz.example", "is not a valid IDNA name");
  expect_error("a.xn--a.example", "is not a valid IDNA name");
  expect_error("\xff\xfe.example", "is not a valid IDNA name");
}

TEST(HostNameTest, ErrorsNameTheNamePrintably) {
  EXPECT_EQ(error_of("a b.example"),
            "host name 'a b.example' has a character other than a-z, 0-9, '-' and '_'");
  EXPECT_EQ(error_of("a\nb.example"),
            "host name 'a\\x0ab.example' has a character other than a-z, 0-9, '-' and '_'");
  expect_error(std::string_view("a\0b", 3), "'a\\x00b' holds a NUL byte");
  expect_error("évil'.example", "'\\xc3\\xa9vil\\x27.example'");
  for (const char* name : {"a/b", "a:b", "a@b", "a%b", "a\\b", "*.x", "a*b", "[::1].x"})
    expect_error(name, "has a character other than");
  expect_error("-a.example", "starts or ends with '-'");
  expect_error("a-.example", "starts or ends with '-'");
  expect_error("example.-", "starts or ends with '-'");
  const std::string huge(5000, 'a');
  const std::string message = error_of(huge);
  EXPECT_LT(message.size(), 200u);
  EXPECT_NE(message.find("..."), std::string::npos);
}

TEST(HostNameTest, LabelAndNameLengthLimits) {
  const std::string l63(63, 'a');
  const std::string l64(64, 'a');
  EXPECT_EQ(norm(l63 + ".example"), l63 + ".example");
  expect_error(l64 + ".example", "has a label longer than 63 bytes");
  expect_error("x." + l64, "has a label longer than 63 bytes");
  // 253 bytes: three 63-byte labels, one 61-byte label, three dots.
  const std::string n253 = l63 + "." + l63 + "." + l63 + "." + std::string(61, 'b');
  ASSERT_EQ(n253.size(), 253u);
  EXPECT_EQ(norm(n253), n253);
  EXPECT_EQ(norm(n253 + "."), n253);  // the trailing dot does not count
  const std::string n254 = n253 + "b";
  expect_error(n254, "is longer than 253 bytes");
  expect_error(n254 + ".", "is longer than 253 bytes");
  // A U-label of 59 bytes whose A-label is past 63 bytes.
  const std::string u = "ü" + std::string(57, 'a');
  expect_error(u + ".example", "has a label longer than 63 bytes");
}

TEST(HostNameTest, IpLiteralsAreNotNames) {
  for (const char* literal :
       {"127.0.0.1", "203.0.113.7", "::1", "[::1]", "2001:db8::1", "::ffff:127.0.0.1"})
    expect_error(literal, "is an IP address literal");
  expect_error("１２７.０.０.１", "is an IP address literal");
  expect_error(
      "127.0.0.1.",
      "is an IP address literal");  // the trailing dot goes first  // fullwidth digits map to ASCII
}

TEST(HostNameTest, NumericLastLabelsAreRefused) {
  for (const char* name :
       {"127.1", "127.0.1", "2130706433", "0177.0.0.1", "010.0.0.1", "0x7f.1", "0x7f", "0x7F000001",
        "0X7f.0.0.1", "1.0x7f", "1.2.3.4444", "256.0.0.1", "1.2.3.4.5", "example.123", "0x"}) {
    expect_error(name, "ends in a number");
  }
  EXPECT_EQ(norm("example.0xg"), "example.0xg");
  EXPECT_EQ(norm("example.123a"), "example.123a");
}

}  // namespace
}  // namespace carapace::egress
