// Fuzzes the guest agent's stub resolver on what any process in a sandbox can send it
// (docs/security.md #44): parse_dns_query on every datagram, and for what it accepts the reply the
// stub would send, with the checks the stub relies on -- a question's name is at most 253
// characters dotted (255 on the wire), its echoed wire form is inside the datagram, and a reply
// fits a 512-byte UDP answer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <variant>

#include "guest/agent/dns_message.h"
#include "guest/agent/fake_addresses.h"

using namespace carapace::agent;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> d(data, size);
  auto parsed = parse_dns_query(d);
  if (auto* err = std::get_if<DnsQueryError>(&parsed)) {
    if (err->why.empty()) std::abort();
    if (auto id = dns_query_id(d)) {
      if (dns_error_reply(*id, err->rcode).size() != kDnsHeaderBytes) std::abort();
    } else if (size >= kDnsHeaderBytes) {
      std::abort();
    }
    return 0;
  }
  const DnsQuestion& q = std::get<DnsQuestion>(parsed);
  if (q.name.size() > 253 || q.wire.size() > 255 + 4 || q.wire.size() + kDnsHeaderBytes > size)
    std::abort();
  // The name as the stub judges it; a stand-in reply for it must fit UDP.
  (void)stub_answers_name(q.name);
  if (dns_reply(q, DnsRcode::kNoError, FakeAddressTable::kFirst, 300).size() > kDnsMaxReplyBytes)
    std::abort();
  return 0;
}
