// The SOCKS5 parser of the egress proxy (egress/proxy/socks5_request.h, RFC 1928 §3-§6) over
// bytes alone: what it takes, every refusal and the reply it names, truncated input, and where a
// message ends (docs/security.md #41).
#include "egress/proxy/socks5_request.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <initializer_list>
#include <string>

namespace carapace::egress::socks5 {
namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string out;
  for (int v : b)
    out.push_back(static_cast<char>(v));
  return out;
}

std::string port_bytes(uint16_t port) {
  return bytes({port >> 8, port & 0xff});
}

std::string domain_request(const std::string& name, uint16_t port, int cmd = 0x01) {
  return bytes({0x05, cmd, 0x00, 0x03, static_cast<int>(name.size())}) + name + port_bytes(port);
}

std::string v4_request(std::initializer_list<int> addr, uint16_t port) {
  return bytes({0x05, 0x01, 0x00, 0x01}) + bytes(addr) + port_bytes(port);
}

std::string v6_request(const std::string& addr16, uint16_t port) {
  return bytes({0x05, 0x01, 0x00, 0x04}) + addr16 + port_bytes(port);
}

// 2001:db8::1
std::string v6_doc() {
  return bytes({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01});
}

// The refusal of `in` (the test fails if it is anything else).
Malformed refusal(const std::string& in) {
  auto r = parse_request(in);
  EXPECT_FALSE(r.ok()) << "accepted or incomplete";
  return r.ok() ? Malformed{} : r.error();
}

TEST(EgressSocks5RequestTest, AGreetingOfferingNoAuthenticationIsTaken) {
  auto g = parse_greeting(bytes({0x05, 0x02, 0x02, 0x00}));
  ASSERT_TRUE(g.ok()) << g.error().reason;
  ASSERT_TRUE(g->has_value());
  EXPECT_EQ((*g)->size, 4u);
  EXPECT_TRUE((*g)->offers_no_auth);
  // A request sent at once behind it is not the greeting's.
  auto both = parse_greeting(bytes({0x05, 0x01, 0x00}) + domain_request("a.test", 443));
  ASSERT_TRUE(both.ok() && both->has_value());
  EXPECT_EQ((*both)->size, 3u);
  // All 255 methods, X'00' last.
  std::string many = bytes({0x05, 0xff}) + std::string(254, '\x02') + bytes({0x00});
  auto g255 = parse_greeting(many);
  ASSERT_TRUE(g255.ok() && g255->has_value());
  EXPECT_EQ((*g255)->size, 257u);
  EXPECT_TRUE((*g255)->offers_no_auth);
}

TEST(EgressSocks5RequestTest, AGreetingWithoutNoAuthenticationSaysSo) {
  // X'02' username/password, X'01' GSSAPI: a valid greeting the proxy answers with X'FF'.
  auto g = parse_greeting(bytes({0x05, 0x02, 0x02, 0x01}));
  ASSERT_TRUE(g.ok() && g->has_value());
  EXPECT_FALSE((*g)->offers_no_auth);
}

TEST(EgressSocks5RequestTest, SecurityCheck41_ATruncatedGreetingAsksForMore) {
  for (std::string in :
       {std::string(), bytes({0x05}), bytes({0x05, 0x03}), bytes({0x05, 0x03, 0x02, 0x00})}) {
    auto g = parse_greeting(in);
    ASSERT_TRUE(g.ok()) << in.size() << ": " << g.error().reason;
    EXPECT_FALSE(g->has_value()) << in.size();
  }
}

TEST(EgressSocks5RequestTest, SecurityCheck41_ABadVersionOrNoMethodsIsRefusedAtOnce) {
  auto v4 = parse_greeting(bytes({0x04}));
  ASSERT_FALSE(v4.ok());
  EXPECT_NE(v4.error().reason.find("VER 4"), std::string::npos) << v4.error().reason;
  auto none = parse_greeting(bytes({0x05, 0x00}));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().reason.find("no method"), std::string::npos) << none.error().reason;
}

TEST(EgressSocks5RequestTest, AConnectToADomainNameKeepsTheNameAsSent) {
  // The parser does not normalise: the policy's destination parser does, for SOCKS5 and HTTP.
  auto r = parse_request(domain_request("Pypi.Org.", 443));
  ASSERT_TRUE(r.ok()) << r.error().reason;
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->type, AddressType::kDomainName);
  EXPECT_EQ((*r)->host, "Pypi.Org.");
  EXPECT_EQ((*r)->port, 443);
  EXPECT_EQ((*r)->size, 4u + 1 + 9 + 2);
  // The longest name a length octet can carry.
  std::string longest(255, 'a');
  auto l = parse_request(domain_request(longest, 65535));
  ASSERT_TRUE(l.ok() && l->has_value());
  EXPECT_EQ((*l)->host, longest);
  EXPECT_EQ((*l)->port, 65535);
}

TEST(EgressSocks5RequestTest, AddressLiteralsBecomeTheirText) {
  auto v4 = parse_request(v4_request({203, 0, 113, 7}, 8080));
  ASSERT_TRUE(v4.ok() && v4->has_value());
  EXPECT_EQ((*v4)->type, AddressType::kIpv4);
  EXPECT_EQ((*v4)->host, "203.0.113.7");
  EXPECT_EQ((*v4)->port, 8080);
  EXPECT_EQ((*v4)->size, 10u);
  auto v6 = parse_request(v6_request(v6_doc(), 443));
  ASSERT_TRUE(v6.ok() && v6->has_value());
  EXPECT_EQ((*v6)->type, AddressType::kIpv6);
  EXPECT_EQ((*v6)->host, "2001:db8::1");
  EXPECT_EQ((*v6)->size, 22u);
}

TEST(EgressSocks5RequestTest, SecurityCheck41_BytesAfterTheRequestAreNotPartOfIt) {
  // A TLS ClientHello sent without waiting for the reply: tunnel data, left for the upstream.
  std::string req = domain_request("a.test", 443);
  std::string hello = bytes({0x16, 0x03, 0x01, 0x02, 0x00});
  auto r = parse_request(req + hello);
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((*r)->size, req.size());
  EXPECT_EQ((*r)->host, "a.test");
}

TEST(EgressSocks5RequestTest, SecurityCheck41_EveryTruncatedRequestAsksForMore) {
  for (const std::string& full : {domain_request("files.test", 443),
                                  v4_request({203, 0, 113, 7}, 80), v6_request(v6_doc(), 443)}) {
    for (size_t n = 0; n < full.size(); n++) {
      auto r = parse_request(full.substr(0, n));
      ASSERT_TRUE(r.ok()) << n << ": " << r.error().reason;
      EXPECT_FALSE(r->has_value()) << "complete after " << n << " of " << full.size();
    }
    auto r = parse_request(full);
    ASSERT_TRUE(r.ok() && r->has_value());
  }
}

TEST(EgressSocks5RequestTest, SecurityCheck41_BindAndUdpAssociateAreCommandNotSupported) {
  for (int cmd : {0x02, 0x03, 0x00, 0x04, 0xff}) {
    // Refused at the command byte, without waiting for the rest.
    Malformed m = refusal(bytes({0x05, cmd}));
    EXPECT_EQ(m.reply, Reply::kCommandNotSupported) << cmd;
    EXPECT_EQ(refusal(domain_request("a.test", 443, cmd)).reply, Reply::kCommandNotSupported);
  }
  EXPECT_NE(refusal(bytes({0x05, 0x02})).reason.find("BIND"), std::string::npos);
  EXPECT_NE(refusal(bytes({0x05, 0x03})).reason.find("UDP ASSOCIATE"), std::string::npos);
}

TEST(EgressSocks5RequestTest, SecurityCheck41_AnUnknownAddressTypeIs08) {
  for (int atyp : {0x00, 0x02, 0x05, 0xff}) {
    Malformed m = refusal(bytes({0x05, 0x01, 0x00, atyp}));
    EXPECT_EQ(m.reply, Reply::kAddressTypeNotSupported) << atyp;
    EXPECT_NE(m.reason.find("address type"), std::string::npos) << m.reason;
  }
}

TEST(EgressSocks5RequestTest, SecurityCheck41_MalformedFieldsAreGeneralFailures) {
  struct Case {
    std::string in;
    const char* words;
  };
  for (const Case& c :
       {Case{bytes({0x04}), "VER 4"}, Case{bytes({0x05, 0x01, 0x01}), "reserved byte"},
        Case{bytes({0x05, 0x01, 0x00, 0x03, 0x00}), "domain name is empty"},
        Case{domain_request("a.test", 0), "port 0"},
        Case{v4_request({203, 0, 113, 7}, 0), "port 0"}}) {
    Malformed m = refusal(c.in);
    EXPECT_EQ(m.reply, Reply::kGeneralFailure) << c.words;
    EXPECT_NE(m.reason.find(c.words), std::string::npos) << m.reason;
    EXPECT_EQ(m.reason.find('\n'), std::string::npos);
  }
}

TEST(EgressSocks5RequestTest, RepliesCarryBndZero) {
  EXPECT_EQ(method_reply(kMethodNoAuth), bytes({0x05, 0x00}));
  EXPECT_EQ(method_reply(kMethodNoneAcceptable), bytes({0x05, 0xff}));
  EXPECT_EQ(reply(Reply::kSucceeded), bytes({0x05, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(reply(Reply::kNotAllowed), bytes({0x05, 0x02, 0x00, 0x01, 0, 0, 0, 0, 0, 0}));
}

TEST(EgressSocks5RequestTest, DialRefusalsMapToTheirReplies) {
  auto of = [](DialRefusal::Kind kind, int err = 0) {
    DialRefusal r;
    r.kind = kind;
    r.sys_errno = err;
    return reply_for(r);
  };
  EXPECT_EQ(of(DialRefusal::Kind::kDenied), Reply::kNotAllowed);
  EXPECT_EQ(of(DialRefusal::Kind::kUnresolved), Reply::kHostUnreachable);
  EXPECT_EQ(of(DialRefusal::Kind::kTimeout, ETIMEDOUT), Reply::kTtlExpired);
  EXPECT_EQ(of(DialRefusal::Kind::kUnreachable, ECONNREFUSED), Reply::kConnectionRefused);
  EXPECT_EQ(of(DialRefusal::Kind::kUnreachable, ENETUNREACH), Reply::kNetworkUnreachable);
  EXPECT_EQ(of(DialRefusal::Kind::kUnreachable, EHOSTUNREACH), Reply::kHostUnreachable);
  EXPECT_EQ(of(DialRefusal::Kind::kUnreachable, EACCES), Reply::kGeneralFailure);
  EXPECT_EQ(of(DialRefusal::Kind::kUnreachable), Reply::kGeneralFailure);
}

}  // namespace
}  // namespace carapace::egress::socks5
