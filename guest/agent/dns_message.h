// The little of DNS (RFC 1035 section 4) the agent's stub resolver needs: one question read from
// a query, one reply written for it. Queries come from any process in the sandbox, so the reader
// trusts nothing: every length is checked against the datagram, compression pointers (which a
// query never needs, RFC 1035 4.1.4) are refused, and a name is at most 255 bytes on the wire.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "common/base/result.h"

namespace carapace::agent {

inline constexpr size_t kDnsHeaderBytes = 12;
inline constexpr size_t kDnsMaxReplyBytes = 512;  // UDP without EDNS (RFC 1035 4.2.1)

enum class DnsType : uint16_t { kA = 1, kAaaa = 28 };

enum class DnsRcode : uint8_t {
  kNoError = 0,
  kFormErr = 1,
  kServFail = 2,
  kNxDomain = 3,
  kNotImp = 4,
  kRefused = 5,
};

struct DnsQuestion {
  uint16_t id = 0;
  bool recursion_desired = false;
  std::string name;  // lower case, dotted, no trailing dot; "" for the root
  uint16_t qtype = 0;
  uint16_t qclass = 0;
  std::vector<uint8_t> wire;  // the question as it came (name, type, class), echoed in replies
};

// Why a query has no question to answer, and what to answer instead.
struct DnsQueryError {
  DnsRcode rcode = DnsRcode::kFormErr;
  std::string why;
};

// The query's header, when it has one (12 bytes): enough for an error reply to carry its id.
std::optional<uint16_t> dns_query_id(std::span<const uint8_t> datagram);

// One standard query (QR 0, opcode 0) with exactly one question and no answers or authority;
// an additional section (EDNS's OPT, RFC 6891) is allowed and ignored. Labels are 1..63 bytes;
// case is folded to lower for ASCII letters, other bytes are kept (the caller judges the name).
std::variant<DnsQuestion, DnsQueryError> parse_dns_query(std::span<const uint8_t> datagram);

// A reply to `q`: its id and question, `rcode`, and when `ipv4` is given one A record for it
// (host byte order) with `ttl` seconds. RA is set: the stub answers for the whole name space.
std::vector<uint8_t> dns_reply(const DnsQuestion& q, DnsRcode rcode,
                               std::optional<uint32_t> ipv4 = std::nullopt, uint32_t ttl = 0);

// A reply that carries no question (a query that had none worth echoing): id and rcode only.
std::vector<uint8_t> dns_error_reply(uint16_t id, DnsRcode rcode);

}  // namespace carapace::agent
