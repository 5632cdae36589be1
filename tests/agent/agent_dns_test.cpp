// The transparent egress mode's pieces on their own: the stub resolver's DNS codec
// (docs/security.md #44: every length checked against the datagram, no compression pointers, one
// question), the stand-in address table (#45: bounded, never reused) and which names the stub
// answers.
#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "guest/agent/dns_message.h"
#include "guest/agent/fake_addresses.h"

namespace carapace::agent {
namespace {

// A standard query for `name` (dotted) of `qtype`, id 0x1234, RD set.
std::vector<uint8_t> query(const std::string& name, uint16_t qtype = 1, uint16_t qdcount = 1) {
  std::vector<uint8_t> d{0x12, 0x34, 0x01, 0x00, 0, static_cast<uint8_t>(qdcount),
                         0,    0,    0,    0,    0, 0};
  size_t start = 0;
  while (start < name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    d.push_back(static_cast<uint8_t>(dot - start));
    d.insert(d.end(), name.begin() + static_cast<ptrdiff_t>(start),
             name.begin() + static_cast<ptrdiff_t>(dot));
    start = dot + 1;
  }
  d.push_back(0);
  d.push_back(static_cast<uint8_t>(qtype >> 8));
  d.push_back(static_cast<uint8_t>(qtype));
  d.push_back(0);
  d.push_back(1);
  return d;
}

DnsRcode rcode_of(const std::vector<uint8_t>& d) {
  const auto r = parse_dns_query(d);
  return std::holds_alternative<DnsQueryError>(r) ? std::get<DnsQueryError>(r).rcode
                                                  : DnsRcode::kNoError;
}

TEST(DnsMessageTest, AQueryIsReadWithItsNameInLowerCase) {
  auto r = parse_dns_query(query("PyPI.Org", 1));
  ASSERT_TRUE(std::holds_alternative<DnsQuestion>(r));
  const auto& q = std::get<DnsQuestion>(r);
  EXPECT_EQ(q.id, 0x1234);
  EXPECT_TRUE(q.recursion_desired);
  EXPECT_EQ(q.name, "pypi.org");
  EXPECT_EQ(q.qtype, 1);
  EXPECT_EQ(q.qclass, 1);
  EXPECT_EQ(q.wire.size(), 10u + 4u);
}

TEST(DnsMessageTest, TheReplyEchoesTheQuestionAndCarriesOneARecord) {
  auto q = std::get<DnsQuestion>(parse_dns_query(query("a.test")));
  auto reply = dns_reply(q, DnsRcode::kNoError, 0x7f800001, 300);
  ASSERT_EQ(reply.size(), 12u + q.wire.size() + 16u);
  EXPECT_EQ(reply[0], 0x12);
  EXPECT_EQ(reply[1], 0x34);
  EXPECT_EQ(reply[2] & 0x80, 0x80);  // QR
  EXPECT_EQ(reply[3] & 0x0f, 0);     // NOERROR
  EXPECT_EQ(reply[7], 1);            // ANCOUNT
  const size_t rr = 12 + q.wire.size();
  EXPECT_EQ(reply[rr], 0xc0);  // a pointer to the question's name
  EXPECT_EQ(reply[rr + 1], 12);
  EXPECT_EQ(std::vector<uint8_t>(reply.end() - 4, reply.end()),
            (std::vector<uint8_t>{127, 128, 0, 1}));
  auto nx = dns_reply(q, DnsRcode::kNxDomain);
  EXPECT_EQ(nx[3] & 0x0f, 3);
  EXPECT_EQ(nx[7], 0);
}

// docs/security.md #44
TEST(DnsMessageTest, MalformedQueriesAreFormErrAndNeverReadPastTheDatagram) {
  EXPECT_EQ(rcode_of({1, 2, 3}), DnsRcode::kFormErr);
  auto q = query("a.test");
  for (size_t cut = 12; cut < q.size(); ++cut)  // every truncation
    EXPECT_EQ(rcode_of(std::vector<uint8_t>(q.begin(), q.begin() + static_cast<ptrdiff_t>(cut))),
              DnsRcode::kFormErr)
        << cut;
  EXPECT_EQ(rcode_of(query("a.test", 1, 2)), DnsRcode::kFormErr);  // two questions
  EXPECT_EQ(rcode_of(query("a.test", 1, 0)), DnsRcode::kFormErr);  // none
  auto response = query("a.test");
  response[2] |= 0x80;
  EXPECT_EQ(rcode_of(response), DnsRcode::kFormErr);
  auto with_answer = query("a.test");
  with_answer[7] = 1;
  EXPECT_EQ(rcode_of(with_answer), DnsRcode::kFormErr);
  auto notify = query("a.test");
  notify[2] |= 4 << 3;  // opcode 4
  EXPECT_EQ(rcode_of(notify), DnsRcode::kNotImp);
  // A compression pointer, pointing at itself.
  std::vector<uint8_t> loop{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1};
  EXPECT_EQ(rcode_of(loop), DnsRcode::kFormErr);
  EXPECT_EQ(rcode_of(query(std::string(64, 'a') + ".test")), DnsRcode::kFormErr);
}

TEST(DnsMessageTest, NamesUpTo255BytesOnTheWirePassAndLongerOnesDoNot) {
  // 4 labels of 62 bytes: 4 * 63 + 1 = 253 bytes on the wire.
  const std::string l(62, 'x');
  EXPECT_EQ(rcode_of(query(l + "." + l + "." + l + "." + l)), DnsRcode::kNoError);
  // Plus a one-byte label: 255.
  EXPECT_EQ(rcode_of(query(l + "." + l + "." + l + "." + l + ".a")), DnsRcode::kNoError);
  EXPECT_EQ(rcode_of(query(l + "." + l + "." + l + "." + l + ".ab")), DnsRcode::kFormErr);
}

TEST(DnsMessageTest, AnErrorReplyCarriesTheIdAndNoQuestion) {
  auto e = dns_error_reply(0xbeef, DnsRcode::kFormErr);
  ASSERT_EQ(e.size(), 12u);
  EXPECT_EQ(e[0], 0xbe);
  EXPECT_EQ(e[1], 0xef);
  EXPECT_EQ(e[3] & 0x0f, 1);
  EXPECT_EQ(e[5], 0);
  EXPECT_FALSE(dns_query_id(std::vector<uint8_t>(11, 0)).has_value());
}

// docs/security.md #45
TEST(FakeAddressTableTest, EachNameKeepsOneAddressAndTheTableIsBounded) {
  FakeAddressTable t;
  auto a = t.address_for("a.test");
  auto b = t.address_for("b.test");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, FakeAddressTable::kFirst);
  EXPECT_EQ(*b, FakeAddressTable::kFirst + 1);
  EXPECT_EQ(t.address_for("a.test"), a);
  EXPECT_EQ(t.name_for(*b), "b.test");
  EXPECT_FALSE(t.name_for(FakeAddressTable::kFirst + 2).has_value());
  EXPECT_FALSE(t.name_for(0x7f000001).has_value());
  for (size_t i = 2; i < FakeAddressTable::kMaxNames; ++i)
    ASSERT_TRUE(t.address_for("n" + std::to_string(i) + ".test").has_value());
  EXPECT_FALSE(t.address_for("one-too-many.test").has_value());
  EXPECT_EQ(t.address_for("a.test"), a);  // old names still answer
  EXPECT_EQ(t.entries().size(), FakeAddressTable::kMaxNames);
  EXPECT_EQ(ipv4_text(FakeAddressTable::kFirst), "127.128.0.1");
}

TEST(FakeAddressTableTest, TheStubAnswersHostNamesOnly) {
  for (const char* yes : {"pypi.org", "files.pythonhosted.org", "a-b.test", "_srv.example", "x"})
    EXPECT_TRUE(stub_answers_name(yes)) << yes;
  for (const char* no : {"", "localhost", "db.localhost", "1.0.0.127.in-addr.arpa", "b.0.ip6.arpa",
                         "127.0.0.1", "10.1", "a..b", "a b.test", "a*.test", "caf\xc3\xa9.test"})
    EXPECT_FALSE(stub_answers_name(no)) << no;
  EXPECT_FALSE(stub_answers_name(std::string(64, 'a') + ".test"));
  EXPECT_TRUE(stub_answers_name("notlocalhost"));
}

}  // namespace
}  // namespace carapace::agent
